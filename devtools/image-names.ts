/**
 * The `im_name` the tests give a test image: its file name without folder or extension (`/images/skimage_chelsea.jpg`
 * is `skimage_chelsea`). Free of Node, for the Worker's tests in workerd as for the Node-side ones.
 */
export const imageNameOf = (file: string): string => file.replace(/^.*\//, '').replace(/\.[a-z]+$/, '');
