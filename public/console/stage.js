/**
 * The query image of a search by image, with the detected objects drawn over it and the object searched named.
 * Clicking an object, or dragging out an area, hands `onRegion` the `box` to search and the box to show as selected,
 * in the image's own pixels: the coordinates the API speaks (docs/api.md, POST /uploadsearch).
 */

/** Pointer travel, in screen pixels, that makes a press a drag rather than a click. */
const DRAG_THRESHOLD = 4;
/** Where in an object's box to look for a point that no smaller object covers: the centre first. */
const POINT_FRACTIONS = [0.5, 0.3, 0.7, 0.15, 0.85];

const boxText = (box) => box.join(',');
const area = ([x1, y1, x2, y2]) => (x2 - x1) * (y2 - y1);
const contains = ([x1, y1, x2, y2], [x, y]) => x >= x1 && x <= x2 && y >= y1 && y <= y2;

/**
 * The zero-size box that names a detected object: the service searches the smallest object at that point (spec
 * 4.5). The object's own box would be searched as a crop, detected anew, and the object may not be found in it.
 */
function pointBox(object, objects) {
  const [x1, y1, x2, y2] = object.box;
  const smaller = objects.filter((other) => other !== object && area(other.box) < area(object.box));
  const points = POINT_FRACTIONS.flatMap((fy) =>
    POINT_FRACTIONS.map((fx) => [Math.round(x1 + fx * (x2 - x1)), Math.round(y1 + fy * (y2 - y1))]),
  );
  const [x, y] = points.find((point) => !smaller.some((other) => contains(other.box, point))) ?? points[0];
  return [x, y, x, y];
}

const CAPTIONS = {
  loading: 'Finding the objects in the image…',
  boxes: 'Click a box to search that object, or drag on the image to search an area.',
  none: 'No object was found in the image: drag on it to search an area.',
  searchFailed: 'The search failed: the message below says why.',
  failed: 'The image could not be shown here: the search uses it all the same, but no box can be drawn on it.',
};

export class Stage {
  #root;
  #image;
  #overlay;
  #caption;
  #searched;
  #onRegion;
  #objectUrl = null;
  #drag = null;

  constructor(root, onRegion) {
    this.#root = root;
    this.#image = root.querySelector('img');
    this.#overlay = root.querySelector('.overlay');
    this.#caption = root.querySelector('figcaption');
    this.#searched = root.querySelector('.searched');
    this.#onRegion = onRegion;
    this.#overlay.addEventListener('pointerdown', (event) => this.#press(event));
    this.#overlay.addEventListener('pointermove', (event) => this.#move(event));
    this.#overlay.addEventListener('pointerup', (event) => this.#release(event));
    this.#overlay.addEventListener('pointercancel', () => this.#endDrag());
  }

  /** Shows a picked file or an image URL; resolves once its natural size is known (boxes need it), or it failed. */
  async show(source) {
    if (this.#objectUrl) URL.revokeObjectURL(this.#objectUrl);
    this.#objectUrl = source instanceof Blob ? URL.createObjectURL(source) : null;
    this.#overlay.replaceChildren();
    this.#searched.textContent = '';
    this.#root.hidden = false;
    this.#image.src = this.#objectUrl ?? source;
    const loaded = await this.#image.decode().then(() => true, () => false);
    this.#root.classList.toggle('failed', !loaded);
    this.#caption.textContent = loaded ? CAPTIONS.loading : CAPTIONS.failed;
  }

  /** The detected objects (docs/api.md) as buttons over the image; `selected` is the box last searched. */
  drawObjects(objects, selected) {
    if (!this.#image.naturalWidth) return;
    this.#caption.textContent = objects.length > 0 ? CAPTIONS.boxes : CAPTIONS.none;
    const buttons = objects.map((object) => {
      const button = this.#place(document.createElement('button'), object.box);
      button.type = 'button';
      button.className = 'box';
      button.dataset.box = boxText(object.box);
      button.classList.toggle('selected', selected !== undefined && boxText(selected) === button.dataset.box);
      button.textContent = `${object.type} ${object.score.toFixed(2)}`;
      button.setAttribute('aria-label', `Search the ${object.type} at ${boxText(object.box)}`);
      button.addEventListener('click', () => this.#onRegion(pointBox(object, objects), object.box));
      return button;
    });
    // A drawn area is no object's box: it is drawn on its own.
    const drawn = selected && !buttons.some((button) => button.classList.contains('selected'));
    this.#overlay.replaceChildren(...buttons, ...(drawn ? [this.#areaElement(selected)] : []));
  }

  /**
   * Names what the last search searched: `product_types`' first object, an area drawn (type `other`), or, without
   * one, the whole image.
   */
  nameSearched(object) {
    const what = !object ? 'the whole image' : object.type === 'other' ? 'the area drawn' : `${object.type}, ${object.score.toFixed(2)}`;
    this.#searched.textContent = `Searched: ${what}`;
  }

  /** A failed search found no object; an image that could not be shown keeps saying so. */
  searchFailed() {
    this.#searched.textContent = '';
    if (this.#image.naturalWidth && this.#overlay.childElementCount === 0) this.#caption.textContent = CAPTIONS.searchFailed;
  }

  #areaElement(box) {
    const element = this.#place(document.createElement('div'), box);
    element.className = 'area';
    return element;
  }

  /** Positions an element over a box in percentages of the image, so it follows the image's displayed size. */
  #place(element, [x1, y1, x2, y2]) {
    const { naturalWidth: width, naturalHeight: height } = this.#image;
    Object.assign(element.style, {
      left: `${(100 * x1) / width}%`,
      top: `${(100 * y1) / height}%`,
      width: `${(100 * (x2 - x1)) / width}%`,
      height: `${(100 * (y2 - y1)) / height}%`,
    });
    return element;
  }

  /** A screen position as a pixel of the image, within its bounds. */
  #pixel(event) {
    const rect = this.#overlay.getBoundingClientRect();
    const clamp = (value, max) => Math.min(max, Math.max(0, Math.round(value)));
    return [
      clamp(((event.clientX - rect.left) / rect.width) * this.#image.naturalWidth, this.#image.naturalWidth),
      clamp(((event.clientY - rect.top) / rect.height) * this.#image.naturalHeight, this.#image.naturalHeight),
    ];
  }

  #press(event) {
    if (event.button !== 0 || !this.#image.naturalWidth) return;
    this.#drag = { id: event.pointerId, x: event.clientX, y: event.clientY, start: this.#pixel(event), element: null };
  }

  #move(event) {
    const drag = this.#drag;
    if (!drag || drag.id !== event.pointerId) return;
    if (!drag.element) {
      if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < DRAG_THRESHOLD) return;
      // Only a real drag captures the pointer: a plain click must still reach the object under it.
      this.#overlay.setPointerCapture(event.pointerId);
      drag.element = this.#overlay.appendChild(document.createElement('div'));
      drag.element.className = 'area drawing';
    }
    this.#place(drag.element, this.#boxTo(event));
  }

  #release(event) {
    const drag = this.#drag;
    if (!drag?.element || drag.id !== event.pointerId) return this.#endDrag();
    const box = this.#boxTo(event);
    this.#endDrag();
    if (box[2] > box[0] && box[3] > box[1]) this.#onRegion(box, box);
  }

  #boxTo(event) {
    const [x, y] = this.#pixel(event);
    const [sx, sy] = this.#drag.start;
    return [Math.min(sx, x), Math.min(sy, y), Math.max(sx, x), Math.max(sy, y)];
  }

  #endDrag() {
    this.#drag?.element?.remove();
    this.#drag = null;
  }
}
