/** The longest `im_name` an image may have (docs/api.md, Images and metadata). */
export const MAX_IM_NAME_LENGTH = 128;

/**
 * Whether a name could be an image's: a longer one is never looked up. It is not there, and it would make the query
 * big.
 */
export const couldNameImage = (imName: string): boolean => imName.length <= MAX_IM_NAME_LENGTH;
