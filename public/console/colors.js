/** The colours of a colour search (spec 4.7): up to five, each with an optional ratio from 1 to 100. */

const MAX_COLORS = 5;
const STARTING_COLORS = ['#c0392b', '#f5f5dc'];

export class ColorRows {
  #list;
  #addButton;

  constructor(list, addButton) {
    this.#list = list;
    this.#addButton = addButton;
    addButton.addEventListener('click', () => this.add('#2e86c1'));
    for (const color of STARTING_COLORS) this.add(color);
  }

  add(color) {
    if (this.#list.children.length >= MAX_COLORS) return;
    const row = document.querySelector('#color-row').content.firstElementChild.cloneNode(true);
    row.querySelector('input[type=color]').value = color;
    row.querySelector('.remove').addEventListener('click', () => {
      row.remove();
      this.#update();
    });
    this.#list.append(row);
    this.#update();
  }

  /** `color` pairs: `<hex6>` or `<hex6>:<ratio>`. */
  params() {
    return [...this.#list.children].map((row) => {
      const hex = row.querySelector('input[type=color]').value.slice(1);
      const ratio = row.querySelector('input[type=number]').value.trim();
      return ['color', ratio ? `${hex}:${ratio}` : hex];
    });
  }

  #update() {
    const count = this.#list.children.length;
    this.#addButton.disabled = count >= MAX_COLORS;
    // A colour search needs one colour at least.
    for (const button of this.#list.querySelectorAll('.remove')) button.disabled = count === 1;
  }
}
