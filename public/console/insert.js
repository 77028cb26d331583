/**
 * The insert page: rows of im_name, im_url or a file from the computer, and a field for each field of the
 * application's schema (read from `GET /images`) go to `POST /insert` (docs/api.md; multipart when a row has a file),
 * then the transaction is followed (`GET /insert/status/<trans_id>`) until every image is processed.
 */

import { ApiFailure, callApi, describeError } from './api.js';
import { element, fromTemplate } from './dom.js';

const POLL_MS = 1000;
/** What a failure's code leaves unsaid: 203's minimum (docs/api.md, Limits). */
const HINTS = { 203: 'at least 100 px on one side' };
/** A failure as listed, its hint beside the message. */
const describeFailure = (entry) => {
  const hint = HINTS[entry.error_code];
  return describeError(hint ? { ...entry, error_message: `${entry.error_message} (${hint})` } : entry);
};
/** Failures listed per status call; more are counted, not listed. */
const ERROR_LIMIT = 100;

export class InsertPage {
  #parts;
  #getAuth;
  /** Bumped by each insert, so that an older transaction's polling stops. */
  #generation = 0;
  /** The application's schema fields, each row's metadata form; empty until read. */
  #schema = [];

  /** `parts`: the page's elements, by their ids in index.html. */
  constructor(parts, getAuth) {
    this.#parts = parts;
    this.#getAuth = getAuth;
    parts.addRow.addEventListener('click', () => this.addRow());
    parts.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#submit();
    });
    this.addRow();
  }

  addRow() {
    const row = fromTemplate('#insert-row');
    row.querySelector('.remove').addEventListener('click', () => row.remove());
    this.#parts.rows.append(row);
    this.#showFields(row);
  }

  /** The data endpoints refuse an app key (docs/decisions.md): say so before anyone tries. */
  authChanged() {
    const refused = this.#getAuth().kind !== 'basic';
    this.#parts.refused.hidden = !refused;
    this.#parts.form.querySelector('button[type=submit]').disabled = refused;
  }

  /** Reads the schema (the catalog endpoint answers it) and gives each row a field for each of its fields. */
  async show() {
    const { schemaNote, rows } = this.#parts;
    if (this.#getAuth().kind !== 'basic') return;
    try {
      const answer = await callApi(this.#getAuth(), 'GET', '/images', [['limit', '1']]);
      this.#schema = answer.schema.fields;
      schemaNote.textContent =
        this.#schema.length > 0
          ? 'Metadata: one field for each field of the schema (the Catalog page shows and changes it).'
          : 'The schema has no fields, so no metadata is kept: the Catalog page sets them.';
      for (const row of rows.children) this.#showFields(row);
    } catch (error) {
      schemaNote.textContent = `The schema could not be read: ${error.message}`;
    }
  }

  /** A row's metadata inputs, one a schema field, keeping what was typed in fields still there. */
  #showFields(row) {
    const container = row.querySelector('.fields');
    const typed = new Map([...container.querySelectorAll('[data-field]')].map((input) => [input.dataset.field, input.value]));
    container.replaceChildren(
      ...this.#schema.map(({ name, type }) => {
        const input = element(type === 'text' ? 'textarea' : 'input');
        if (type === 'int' || type === 'float') Object.assign(input, { type: 'number', step: type === 'int' ? '1' : 'any' });
        if (type === 'text') input.rows = 2;
        input.dataset.field = name;
        input.spellcheck = false;
        input.value = typed.get(name) ?? '';
        const label = element('label', type === 'text' ? 'text' : '', `${name} `);
        label.append(element('small', '', type), input);
        return label;
      }),
    );
  }

  /**
   * `im_name[i]`, `im_url[i]` (or the file `image[i]`: the service refuses both) and `<field>[i]` for the filled rows,
   * `i` counting those only.
   */
  #params() {
    const filled = [...this.#parts.rows.children]
      .map((row) => ({
        name: row.querySelector('[name=im_name]').value.trim(),
        url: row.querySelector('[name=im_url]').value.trim(),
        file: row.querySelector('[name=image]').files[0],
        metadata: [...row.querySelectorAll('[data-field]')]
          .map((input) => [input.dataset.field, input.value.trim()])
          .filter(([, value]) => value),
      }))
      .filter((row) => row.name || row.url || row.file || row.metadata.length > 0);
    return filled.flatMap((row, index) => [
      [`im_name[${index}]`, row.name],
      ...(row.file ? [[`image[${index}]`, row.file]] : []),
      ...(row.url || !row.file ? [[`im_url[${index}]`, row.url]] : []),
      ...row.metadata.map(([field, value]) => [`${field}[${index}]`, value]),
    ]);
  }

  async #submit() {
    const generation = ++this.#generation;
    const { errors, transaction } = this.#parts;
    errors.replaceChildren();
    transaction.hidden = true;
    try {
      const params = this.#params();
      const multipart = params.some(([, value]) => value instanceof File);
      const answer = await callApi(this.#getAuth(), 'POST', '/insert', params, { multipart });
      // `warning`: some rows were refused at once; the others are in the transaction.
      this.#showErrors(answer.error);
      await this.#follow(answer.trans_id, answer.total, generation);
    } catch (error) {
      this.#showErrors(error instanceof ApiFailure ? error.errors : [error.message]);
    }
  }

  async #follow(transId, total, generation) {
    const { transaction, title } = this.#parts;
    title.textContent = `Transaction ${transId}: ${total} images`;
    transaction.hidden = false;
    this.#showStatus({ processed_percent: 0, success_count: 0, fail_count: 0, total, error_list: [] });
    for (;;) {
      const query = [['error_limit', String(ERROR_LIMIT)]];
      const answer = await callApi(this.#getAuth(), 'GET', `/insert/status/${transId}`, query);
      if (generation !== this.#generation) return;
      const [status] = answer.result;
      this.#showStatus(status);
      if (status.processed_percent >= 100) return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  #showStatus(status) {
    const { progress, counts, failures } = this.#parts;
    progress.value = status.processed_percent;
    progress.textContent = `${status.processed_percent}%`;
    const state = status.processed_percent >= 100 ? 'done' : 'processing';
    const outcome = `${status.success_count} succeeded · ${status.fail_count} failed of ${status.total}`;
    counts.textContent = `${status.processed_percent}% ${state} · ${outcome}`;
    const more = status.fail_count - status.error_list.length;
    const item = (text) => Object.assign(document.createElement('li'), { textContent: text });
    const listed = status.error_list.map((entry) => item(describeFailure(entry)));
    failures.replaceChildren(...listed, ...(more > 0 ? [item(`and ${more} more`)] : []));
  }

  #showErrors(entries) {
    const paragraph = (entry) =>
      Object.assign(document.createElement('p'), { className: 'error', textContent: describeFailure(entry) });
    this.#parts.errors.replaceChildren(...entries.map(paragraph));
  }
}
