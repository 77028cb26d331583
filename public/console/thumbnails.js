/** Thumbnails of collection images (`GET /image`) as object URLs, revoked when the cards showing them go. */

import { imageObjectUrl } from './api.js';

export class Thumbnails {
  #urls = [];

  /** Loads an image's bytes into `img`; a card that failed shows "no preview". */
  async load(img, auth, imName) {
    img.alt = imName;
    try {
      const url = await imageObjectUrl(auth, imName);
      // The cards may have been replaced while the bytes came.
      if (!img.isConnected) return URL.revokeObjectURL(url);
      this.#urls.push(url);
      img.src = url;
    } catch {
      img.closest('.thumb').classList.add('missing');
    }
  }

  revokeAll() {
    for (const url of this.#urls.splice(0)) URL.revokeObjectURL(url);
  }
}
