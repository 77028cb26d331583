/**
 * The Catalog page: the application's images a page at a time (`GET /images`, a console endpoint, Basic auth only),
 * each with its thumbnail and a remove button (`POST /remove`), and the metadata schema with its types, which the
 * admin token may replace (`PUT /admin/apps/{app_id}/schema`, README "Use it").
 */

import { ApiFailure, callAdmin, callApi, describeError } from './api.js';
import { element, fromTemplate, valuePairs } from './dom.js';
import { Thumbnails } from './thumbnails.js';

/** The admin token is kept for this tab only: it rules every application, not just this one. */
const TOKEN_KEY = 'image-search-console:admin-token';
/** docs/api.md, Images and metadata. */
const FIELD_TYPES = ['string', 'int', 'float', 'text'];

export class CatalogPage {
  #parts;
  #getAuth;
  #thumbnails = new Thumbnails();
  #page = 1;
  /** The last listing's application, whose schema the admin API replaces. */
  #appId = null;
  /** Bumped by each listing, so that only the latest one is shown. */
  #generation = 0;
  /** The schema shown, as JSON: the editor's rows are rebuilt only when it changes, not at each page. */
  #shownSchema = null;

  /** `parts`: the page's elements, by their ids in index.html. */
  constructor(parts, getAuth) {
    this.#parts = parts;
    this.#getAuth = getAuth;
    for (const button of parts.pager.querySelectorAll('button')) {
      button.addEventListener('click', () => void this.show(this.#page + Number(button.dataset.step)));
    }
    parts.refresh.addEventListener('click', () => void this.show(this.#page));
    parts.limit.addEventListener('change', () => void this.show(1));
    const { schemaForm } = parts;
    schemaForm.elements.adminToken.value = sessionStorage.getItem(TOKEN_KEY) ?? '';
    schemaForm.elements.adminToken.addEventListener('change', (event) => {
      sessionStorage.setItem(TOKEN_KEY, event.target.value.trim());
    });
    parts.addField.addEventListener('click', () => this.#addField({ name: '', type: 'string', searchable: true }));
    schemaForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#saveSchema();
    });
  }

  /** Listing needs the key pair: say so, rather than call with an app key. */
  authChanged() {
    this.#parts.refused.hidden = this.#getAuth().kind === 'basic';
  }

  /** Lists page `page` (1 at least) of the catalog, with its count and the schema. */
  async show(page = this.#page) {
    const generation = ++this.#generation;
    const { errors, count, grid, pager } = this.#parts;
    this.#page = Math.max(1, page);
    errors.replaceChildren();
    if (this.#getAuth().kind !== 'basic') return this.#clear();
    count.textContent = 'Loading…';
    try {
      const params = [['page', String(this.#page)], ['limit', this.#parts.limit.value.trim()]];
      const answer = await callApi(this.#getAuth(), 'GET', '/images', params);
      if (generation !== this.#generation) return;
      const pages = Math.max(1, Math.ceil(answer.total / answer.limit));
      // Past the end (its last images removed): the last page instead.
      if (answer.page > pages) return this.show(pages);
      this.#appId = answer.app_id;
      this.#thumbnails.revokeAll();
      count.textContent = `${answer.total} images · page ${answer.page} of ${pages}`;
      grid.replaceChildren(...answer.result.map((item) => this.#card(item)));
      if (answer.result.length === 0) grid.append(element('p', 'empty', 'No images in the catalog.'));
      pager.hidden = answer.total <= answer.limit && answer.page === 1;
      pager.querySelector('[data-step="-1"]').disabled = answer.page <= 1;
      pager.querySelector('[data-step="1"]').disabled = answer.page >= pages;
      this.#showSchema(answer.schema.fields);
      this.#showTypes(answer.product_types);
    } catch (error) {
      if (generation !== this.#generation) return;
      this.#clear();
      this.#showErrors(errors, error);
    }
  }

  #clear() {
    this.#thumbnails.revokeAll();
    this.#parts.count.textContent = '';
    this.#parts.grid.replaceChildren();
    this.#parts.pager.hidden = true;
  }

  #card(item) {
    const card = fromTemplate('#catalog-card');
    card.querySelector('.name').textContent = item.im_name;
    card.querySelector('.meta').append(...valuePairs(item.value_map));
    void this.#thumbnails.load(card.querySelector('img'), this.#getAuth(), item.im_name);
    const remove = card.querySelector('.remove-image');
    remove.setAttribute('aria-label', `Remove ${item.im_name}`);
    // A second click confirms: a removal cannot be undone.
    remove.addEventListener('click', () => {
      if (!remove.classList.contains('confirm')) {
        remove.classList.add('confirm');
        remove.textContent = 'Remove for good';
        remove.setAttribute('aria-label', `Remove ${item.im_name} for good`);
        return;
      }
      remove.disabled = true;
      void this.#remove(item.im_name);
    });
    return card;
  }

  async #remove(imName) {
    let failure = null;
    try {
      await callApi(this.#getAuth(), 'POST', '/remove', [['im_name[0]', imName]]);
    } catch (error) {
      failure = error;
    }
    await this.show(this.#page);
    if (failure) this.#showErrors(this.#parts.errors, failure);
  }

  /** The application's own product types with their prompts and attributes, or a line saying it has the defaults. */
  #showTypes(types) {
    const { typesTable, typesDefault } = this.#parts;
    const cell = (text) => element('td', '', text);
    typesTable.tBodies[0].replaceChildren(
      ...(types ?? []).map(({ type, prompts, attributes_list: attributes }) => {
        const row = document.createElement('tr');
        const listed = Object.entries(attributes ?? { color: ['every colour'] }).map(([name, values]) => `${name}: ${values.join(', ')}`);
        row.append(cell(type), cell((prompts ?? []).join(' · ') || '—'), cell(listed.join('; ')));
        return row;
      }),
    );
    typesTable.hidden = !types;
    typesDefault.hidden = Boolean(types);
  }

  /** The schema as a table of its fields and types, and as the editor's rows. */
  #showSchema(fields) {
    const { schemaTable, schemaEmpty, schemaRows } = this.#parts;
    if (JSON.stringify(fields) === this.#shownSchema) return;
    this.#shownSchema = JSON.stringify(fields);
    schemaTable.tBodies[0].replaceChildren(
      ...fields.map(({ name, type, searchable }) => {
        const row = element('tr');
        row.append(element('td', '', name), element('td', '', type), element('td', '', searchable ? 'yes' : 'no'));
        return row;
      }),
    );
    schemaTable.hidden = fields.length === 0;
    schemaEmpty.hidden = fields.length > 0;
    schemaRows.replaceChildren();
    for (const field of fields) this.#addField(field);
  }

  #addField({ name, type, searchable }) {
    const row = fromTemplate('#schema-row');
    row.querySelector('[name=name]').value = name;
    const select = row.querySelector('[name=type]');
    select.replaceChildren(...FIELD_TYPES.map((value) => new Option(value, value, value === type, value === type)));
    row.querySelector('[name=searchable]').checked = searchable;
    row.querySelector('.remove').addEventListener('click', () => row.remove());
    this.#parts.schemaRows.append(row);
  }

  async #saveSchema() {
    const { schemaForm, schemaRows, schemaErrors, schemaSaved } = this.#parts;
    schemaErrors.replaceChildren();
    schemaSaved.textContent = '';
    const token = schemaForm.elements.adminToken.value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    if (!this.#appId) return this.#showErrors(schemaErrors, new Error('List the catalog first: its answer names the application.'));
    if (!token) return this.#showErrors(schemaErrors, new Error('Changing the schema needs the admin token.'));
    const fields = [...schemaRows.children]
      .map((row) => ({
        name: row.querySelector('[name=name]').value.trim(),
        type: row.querySelector('[name=type]').value,
        searchable: row.querySelector('[name=searchable]').checked,
      }))
      .filter((field) => field.name);
    try {
      const answer = await callAdmin(token, 'PUT', `/admin/apps/${encodeURIComponent(this.#appId)}/schema`, { fields });
      this.#showSchema(answer.schema.fields);
      schemaSaved.textContent = `Saved: ${answer.schema.fields.length} fields.`;
    } catch (error) {
      this.#showErrors(schemaErrors, error);
    }
  }

  #showErrors(target, error) {
    const entries = error instanceof ApiFailure ? error.errors : [error.message];
    target.replaceChildren(...entries.map((entry) => element('p', 'error', describeError(entry))));
  }
}
