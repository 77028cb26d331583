/** The console's page: keys, the search modes and their shared advanced form, the insert and catalog pages. */

import { ApiFailure, callApi } from './api.js';
import { CatalogPage } from './catalog.js';
import { ColorRows } from './colors.js';
import { InsertPage } from './insert.js';
import { authOf, describeAuth, forgetKeys, loadKeys, saveKeys } from './keys.js';
import { addFilter, advancedParams, exactFilter } from './params.js';
import { ResultsView } from './results.js';
import { Stage } from './stage.js';

const $ = (selector) => document.querySelector(selector);

// Keys ------------------------------------------------------------------------------------------------------------

const keysForm = $('#keys');
let keys = loadKeys();
const auth = () => authOf(keys);

const insertPage = new InsertPage(
  {
    form: $('#insert-form'),
    rows: $('#insert-rows'),
    addRow: $('#add-row'),
    refused: $('#insert-refused'),
    errors: $('#insert-errors'),
    schemaNote: $('#insert-schema'),
    transaction: $('#transaction'),
    title: $('#transaction-title'),
    progress: $('#insert-progress'),
    counts: $('#insert-counts'),
    failures: $('#insert-failures'),
  },
  auth,
);

const catalogPage = new CatalogPage(
  {
    refused: $('#catalog-refused'),
    count: $('#catalog-count'),
    refresh: $('#catalog-refresh'),
    limit: $('#catalog-limit'),
    errors: $('#catalog-errors'),
    grid: $('#catalog-grid'),
    pager: $('#catalog-pager'),
    typesTable: $('#product-types-table'),
    typesDefault: $('#product-types-default'),
    schemaTable: $('#schema-table'),
    schemaEmpty: $('#schema-empty'),
    schemaForm: $('#schema-form'),
    schemaRows: $('#schema-rows'),
    addField: $('#add-field'),
    schemaErrors: $('#schema-errors'),
    schemaSaved: $('#schema-saved'),
  },
  auth,
);

const currentView = () => ({ '#insert': 'insert', '#catalog': 'catalog' })[location.hash] ?? 'search';

function showKeys() {
  for (const [name, value] of Object.entries(keys)) keysForm.elements[name].value = value;
  $('#key-mode').textContent = describeAuth(auth());
  insertPage.authChanged();
  catalogPage.authChanged();
}

/** New keys: the catalog or the insert page's schema shown is read again with them. */
function keysChanged() {
  showKeys();
  if (currentView() === 'catalog') void catalogPage.show();
  if (currentView() === 'insert') void insertPage.show();
}

keysForm.addEventListener('submit', (event) => {
  event.preventDefault();
  keys = Object.fromEntries(Object.keys(keys).map((name) => [name, keysForm.elements[name].value.trim()]));
  saveKeys(keys);
  keysChanged();
});
$('#forget-keys').addEventListener('click', () => {
  keys = forgetKeys();
  keysChanged();
});

// Pages and search modes ------------------------------------------------------------------------------------------

function showView() {
  const view = currentView();
  if (view === 'catalog') void catalogPage.show();
  if (view === 'insert') void insertPage.show();
  for (const section of document.querySelectorAll('main > section')) section.hidden = section.dataset.view !== view;
  for (const link of document.querySelectorAll('nav a')) {
    link.toggleAttribute('aria-current', link.dataset.view === view);
  }
}

const tabs = document.querySelectorAll('[role=tab]');
/**
 * Each search mode's last search and what it answered: a tab shows its own results, never another's. `runs` counts
 * the mode's searches, so that only the latest one's answer is shown, however late an earlier one comes.
 */
const modes = Object.fromEntries([...tabs].map((tab) => [tab.dataset.mode, { search: null, shown: null, runs: 0 }]));
let currentMode = 'image';

function setMode(mode) {
  for (const tab of tabs) tab.setAttribute('aria-selected', String(tab.dataset.mode === mode));
  for (const form of document.querySelectorAll('form.query')) form.hidden = form.dataset.mode !== mode;
  $('#stage').hidden = mode !== 'image' || !query.source;
  if (mode === currentMode) return;
  currentMode = mode;
  showMode();
}

for (const tab of tabs) tab.addEventListener('click', () => setMode(tab.dataset.mode));
window.addEventListener('hashchange', showView);

// Searching -------------------------------------------------------------------------------------------------------

const advanced = $('#advanced');
const pager = $('.pager');
const results = new ResultsView(
  { errors: $('#errors'), summary: $('#summary'), qinfo: $('#qinfo'), facets: $('#facets'), results: $('#results') },
  {
    getAuth: auth,
    onSimilar: (imName) => {
      setMode('name');
      $('#name-form').elements.im_name.value = imName;
      void run(searchByName(imName), { newQuery: true });
    },
    onFacet: (field, value) => {
      addFilter(advanced, exactFilter(field, value));
      void run(modes[currentMode].search);
    },
  },
);

/** What the current mode last answered: its results, its errors, that it is searching, or nothing yet. */
function showMode() {
  const { shown } = modes[currentMode];
  pager.hidden = true;
  if (!shown) return results.clear();
  if (shown.busy) return results.busy('Searching…');
  if (shown.errors) return results.showErrors(shown.errors);
  const { envelope } = shown;
  results.render(envelope);
  pager.hidden = false;
  pager.querySelector('[data-step="-1"]').disabled = envelope.page <= 1;
  pager.querySelector('[data-step="1"]').disabled = envelope.page * envelope.limit >= envelope.total;
}

/**
 * Runs a search and keeps its answer for its mode. A search is `{mode, call, shown?, failed?}`: `call` asks the API
 * (reading the advanced form then), `shown` shows what else the answer carries, `failed` what a failure changes. A
 * new query (not a rerun with other advanced parameters or another page) starts from page 1.
 */
async function run(search, { newQuery = false } = {}) {
  if (!search) return;
  if (newQuery) advanced.elements.page.value = '';
  const state = modes[search.mode];
  state.search = search;
  const ticket = ++state.runs;
  const settle = (shown) => {
    state.shown = shown;
    if (search.mode === currentMode) showMode();
  };
  settle({ busy: true });
  try {
    const envelope = await search.call();
    if (ticket !== state.runs) return;
    search.shown?.(envelope);
    settle({ envelope });
  } catch (error) {
    if (ticket !== state.runs) return;
    search.failed?.();
    settle({ errors: error instanceof ApiFailure ? error.errors : [error.message] });
  }
}

advanced.addEventListener('submit', (event) => {
  event.preventDefault();
  void run(modes[currentMode].search);
});
for (const button of pager.querySelectorAll('button')) {
  button.addEventListener('click', () => {
    const page = Number(advanced.elements.page.value || 1) + Number(button.dataset.step);
    advanced.elements.page.value = String(Math.max(1, page));
    void run(modes[currentMode].search);
  });
}

// By image: the query image is uploaded (or its URL sent) once; later searches of its objects send its im_id.

let query = { source: null, imId: null, objects: [] };
const stage = new Stage($('#stage'), (box, selected) => void run(imageSearch(box, selected), { newQuery: true }));

/**
 * The query image, or its `box` (`selected` is what is shown selected, else the object searched); the first answer's
 * objects stay drawn, and the object searched (`product_types`' first, docs/api.md) is named.
 */
function imageSearch(box, selected) {
  const current = query;
  return {
    mode: 'image',
    call: () => {
      const from = current.imId ? [['im_id', current.imId]] : current.source;
      const region = box ? [['box', box.join(',')]] : [];
      const params = [...from, ...region, ...advancedParams(advanced, { imageSearch: true })];
      return callApi(auth(), 'POST', '/uploadsearch', params, { multipart: true });
    },
    shown: (envelope) => {
      current.imId = envelope.im_id;
      if (!box) current.objects = envelope.product_types;
      const [searched] = envelope.product_types;
      stage.drawObjects(current.objects, selected ?? searched?.box);
      stage.nameSearched(searched);
      $('#detection-types').replaceChildren(...envelope.product_types_list.map(({ type }) => new Option(type)));
    },
    failed: () => stage.searchFailed(),
  };
}

/** A new query image: a File (uploaded) or a URL (downloaded by the service). */
async function startImageSearch(image) {
  setMode('image');
  query = { source: [image instanceof Blob ? ['image', image] : ['im_url', image]], imId: null, objects: [] };
  $('#stage').hidden = false;
  await stage.show(image);
  await run(imageSearch(), { newQuery: true });
}

const imageForm = $('#image-form');
imageForm.elements.image.addEventListener('change', () => {
  const [file] = imageForm.elements.image.files;
  if (file) void startImageSearch(file);
});
imageForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const url = imageForm.elements.im_url.value.trim();
  const [file] = imageForm.elements.image.files;
  if (url || file) void startImageSearch(url || file);
});

// An image dropped anywhere on the search page: a file, or a link dragged from another page.
document.addEventListener('dragover', (event) => {
  event.preventDefault();
  document.body.classList.add('dropping');
});
document.addEventListener('dragleave', (event) => {
  if (!event.relatedTarget) document.body.classList.remove('dropping');
});
document.addEventListener('drop', (event) => {
  event.preventDefault();
  document.body.classList.remove('dropping');
  const [file] = event.dataTransfer.files;
  const url = event.dataTransfer.getData('text/uri-list').split('\n').find((line) => line && !line.startsWith('#'));
  if (!file && !url) return;
  location.hash = '#search';
  void startImageSearch(file ?? url.trim());
});

// By name, by colour and by text.

/** Spec 4.4 and 4.7: these endpoints take no `detection`, nor does /textsearch. */
const otherParams = () => advancedParams(advanced, { imageSearch: false });

const searchByName = (imName) => ({
  mode: 'name',
  call: () => callApi(auth(), 'GET', '/search', [['im_name', imName], ...otherParams()]),
});

$('#name-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void run(searchByName($('#name-form').elements.im_name.value.trim()), { newQuery: true });
});

const colors = new ColorRows($('#colors'), $('#add-color'));
$('#color-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const chosen = colors.params();
  const call = () => callApi(auth(), 'GET', '/colorsearch', [...chosen, ...otherParams()]);
  void run({ mode: 'color', call }, { newQuery: true });
});

$('#text-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('#text-form').elements.q.value.trim();
  const call = () => callApi(auth(), 'GET', '/textsearch', [['q', text], ...otherParams()]);
  void run({ mode: 'text', call }, { newQuery: true });
});

showKeys();
showView();
