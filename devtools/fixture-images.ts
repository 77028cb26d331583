import path from 'node:path';

/**
 * The project's test images: 107 real photos and cut-outs with their sources and licences in `test/fixtures/images/manifest.json`
 * (see `test/fixtures/README.md`). IMAGES_DIR in the environment points the measurement scripts elsewhere.
 */
export const IMAGES_DIR = process.env.IMAGES_DIR ?? path.resolve(import.meta.dirname, '../test/fixtures/images');

/** Photos of people (`people/manifest.json`), for the garments a pose gives; labelled in `detection-truth.json`, but for the held-out portrait. */
export const PEOPLE_DIR = path.resolve(import.meta.dirname, '../test/fixtures/people');
