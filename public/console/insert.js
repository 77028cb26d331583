/**
 * The insert page: rows of im_name, im_url and metadata go to `POST /insert` (spec 4.1), then the transaction is
 * followed (`GET /insert/status/<trans_id>`, spec 4.2) until every image is processed.
 */

import { ApiFailure, callApi, describeError } from './api.js';

const POLL_MS = 1000;
/** Failures listed per status call; more are counted, not listed. */
const ERROR_LIMIT = 100;

export class InsertPage {
  #parts;
  #getAuth;
  /** Bumped by each insert, so that an older transaction's polling stops. */
  #generation = 0;

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
    const row = document.querySelector('#insert-row').content.firstElementChild.cloneNode(true);
    row.querySelector('.remove').addEventListener('click', () => row.remove());
    this.#parts.rows.append(row);
  }

  /** The data endpoints refuse an app key (docs/decisions.md): say so before anyone tries. */
  authChanged() {
    const refused = this.#getAuth().kind !== 'basic';
    this.#parts.refused.hidden = !refused;
    this.#parts.form.querySelector('button[type=submit]').disabled = refused;
  }

  /** `im_name[i]`, `im_url[i]` and `<field>[i]` for the filled rows, `i` counting those only. */
  #params() {
    const filled = [...this.#parts.rows.children]
      .map((row) => ({
        name: row.querySelector('[name=im_name]').value.trim(),
        url: row.querySelector('[name=im_url]').value.trim(),
        metadata: row.querySelector('[name=metadata]').value,
      }))
      .filter((row) => row.name || row.url || row.metadata.trim());
    return filled.flatMap((row, index) => [
      [`im_name[${index}]`, row.name],
      [`im_url[${index}]`, row.url],
      ...row.metadata
        .split('\n')
        .filter((line) => line.trim())
        .map((line) => {
          const at = line.indexOf('=');
          if (at < 1) throw new Error(`${row.name || `Row ${index + 1}`}: "${line.trim()}" is not field=value.`);
          return [`${line.slice(0, at).trim()}[${index}]`, line.slice(at + 1).trim()];
        }),
    ]);
  }

  async #submit() {
    const generation = ++this.#generation;
    const { errors, transaction } = this.#parts;
    errors.replaceChildren();
    transaction.hidden = true;
    try {
      const answer = await callApi(this.#getAuth(), 'POST', '/insert', this.#params());
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
    const listed = status.error_list.map((entry) => item(describeError(entry)));
    failures.replaceChildren(...listed, ...(more > 0 ? [item(`and ${more} more`)] : []));
  }

  #showErrors(entries) {
    const paragraph = (entry) =>
      Object.assign(document.createElement('p'), { className: 'error', textContent: describeError(entry) });
    this.#parts.errors.replaceChildren(...entries.map(paragraph));
  }
}
