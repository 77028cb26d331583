/** A search's answer on the page: errors, paging summary, query info, facets, and the results or their groups. */

import { describeError } from './api.js';
import { element, fromTemplate, valuePairs } from './dom.js';
import { Thumbnails } from './thumbnails.js';

export class ResultsView {
  #parts;
  #getAuth;
  #onSimilar;
  #onFacet;
  #thumbnails = new Thumbnails();

  /** `parts`: the page's errors, summary, qinfo, facets and results elements. */
  constructor(parts, { getAuth, onSimilar, onFacet }) {
    this.#parts = parts;
    this.#getAuth = getAuth;
    this.#onSimilar = onSimilar;
    this.#onFacet = onFacet;
  }

  busy(text) {
    this.clear();
    this.#parts.summary.textContent = text;
  }

  clear() {
    this.#thumbnails.revokeAll();
    const { errors, summary, qinfo, facets, results } = this.#parts;
    for (const part of [errors, summary, facets, results]) part.replaceChildren();
    qinfo.hidden = true;
  }

  /** The envelope's `error` entries (spec 7), as they came. */
  showErrors(entries) {
    this.clear();
    this.#parts.errors.replaceChildren(...entries.map((entry) => element('p', 'error', describeError(entry))));
  }

  /** A search envelope: `result`, or `group_results` when grouped, with `facets` and `qinfo` when asked for. */
  render(envelope) {
    this.clear();
    const { summary, qinfo, facets, results } = this.#parts;
    const { total, page, limit, reqid } = envelope;
    const pages = Math.max(1, Math.ceil(total / limit));
    const requestId = element('small', 'reqid', `reqid ${reqid}`);
    requestId.title = "The call's id in the service's logs";
    summary.replaceChildren(`${total} results · page ${page} of ${pages} · ${limit} a page `, requestId);
    if (envelope.qinfo) {
      qinfo.textContent = `qinfo ${JSON.stringify(envelope.qinfo, null, 2)}`;
      qinfo.hidden = false;
    }
    facets.replaceChildren(...(envelope.facets ?? []).map((facet) => this.#facet(facet)));
    if (envelope.group_results) {
      results.replaceChildren(
        ...envelope.group_results.map((group) => {
          const section = element('section', 'group');
          const heading = element('h2', '', `${envelope.group_by_key}: ${group.group_by_value}`);
          section.append(heading, this.#grid(group.result));
          return section;
        }),
      );
    } else results.replaceChildren(this.#grid(envelope.result ?? []));
  }

  #grid(items) {
    const grid = element('div', 'grid');
    grid.append(...items.map((item) => this.#card(item)));
    if (items.length === 0) grid.append(element('p', 'empty', 'No results.'));
    return grid;
  }

  #card(item) {
    const card = fromTemplate('#result-card');
    card.dataset.imName = item.im_name;
    card.querySelector('.name').textContent = item.im_name;
    const score = card.querySelector('.score');
    if (item.score === undefined) score.remove();
    else score.textContent = `score ${item.score.toFixed(3)}`;
    card.querySelector('.meta').append(...valuePairs(item.value_map));
    card.querySelector('.similar').addEventListener('click', () => this.#onSimilar(item.im_name));
    void this.#thumbnails.load(card.querySelector('img'), this.#getAuth(), item.im_name);
    return card;
  }

  /** docs/decisions.md: `{key, items: [{value, count}]}` for strings (a value filters on it), `{key, range}` for numbers. */
  #facet(facet) {
    const section = element('section', 'facet');
    section.append(element('h3', '', facet.key));
    if (facet.items) {
      const list = element('ul');
      for (const { value, count } of facet.items) {
        const button = element('button', 'facet-value', count === undefined ? value : `${value} (${count})`);
        button.type = 'button';
        button.title = `Filter on ${facet.key} = ${value}`;
        button.addEventListener('click', () => this.#onFacet(facet.key, value));
        list.append(element('li'));
        list.lastChild.append(button);
      }
      section.append(list);
    } else section.append(element('p', '', facet.range ? `${facet.range.min} – ${facet.range.max}` : 'no values'));
    return section;
  }
}
