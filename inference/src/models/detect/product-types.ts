/**
 * The API's product types, spelled as the ViSearch API spells them ("Jewlery"
 * included). A detector's label map may only map onto these.
 */
export const PRODUCT_TYPES = {
  fashion: [
    'Top', 'Dress', 'Bottom', 'Shoe', 'Bag', 'Watch', 'Furniture', 'Eyewear', 'Jewlery', 'Outerwear', 'Skirt',
    'Indian Ethnic Wear',
  ],
  furniture: [
    'Bed', 'Clock', 'Floating Shelf', 'Lighting', 'Mirror', 'Photo Frame', 'Seating', 'Soft Furnishing',
    'Standing Lamp', 'Storage', 'Table', 'Vase and Pot', 'Shelf and Cabinet',
  ],
} as const;

export type ProductType = (typeof PRODUCT_TYPES)[keyof typeof PRODUCT_TYPES][number];

const ALL_TYPES: ReadonlySet<string> = new Set(Object.values(PRODUCT_TYPES).flat());

export function isProductType(name: string): name is ProductType {
  return ALL_TYPES.has(name);
}
