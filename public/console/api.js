/** Calls to the search API in its JSON envelope (spec 7), authenticated as keys.js decides. */

/** An error entry as the envelope carries it: a message string (search), or an object with a code (data). */
export function describeError(entry) {
  if (typeof entry === 'string') return entry;
  const subject = entry.im_name === undefined ? '' : `${entry.im_name}: `;
  return `${subject}${entry.error_message ?? JSON.stringify(entry)} (${entry.error_code})`;
}

/** A call answered with `fail`, or not with the envelope at all; `errors` are the envelope's error entries. */
export class ApiFailure extends Error {
  constructor(httpStatus, errors) {
    super(errors.map(describeError).join('\n'));
    this.httpStatus = httpStatus;
    this.errors = errors;
  }
}

const authHeaders = (auth) => (auth.kind === 'basic' ? { authorization: auth.header } : {});
const withAppKey = (auth, params) => (auth.kind === 'app' ? [...params, ['access_key', auth.appKey]] : params);

/**
 * One call. `params` are [name, value] pairs, repeated names kept: GET sends them in the query string, POST as a
 * multipart body (`multipart`, which Files need) or an urlencoded one. Answers the envelope; throws ApiFailure.
 */
export async function callApi(auth, method, path, params = [], { multipart = false } = {}) {
  const pairs = withAppKey(auth, params);
  let url = path;
  let body;
  if (method === 'GET') url = `${path}?${new URLSearchParams(pairs)}`;
  else if (multipart) {
    body = new FormData();
    for (const [name, value] of pairs) body.append(name, value);
  } else body = new URLSearchParams(pairs);

  let response;
  try {
    response = await fetch(url, { method, headers: authHeaders(auth), body });
  } catch (error) {
    throw new ApiFailure(0, [`The service could not be reached: ${error.message}`]);
  }
  const envelope = await response.json().catch(() => null);
  if (!envelope || !Array.isArray(envelope.error)) {
    throw new ApiFailure(response.status, [`HTTP ${response.status}: the answer is not the API's envelope.`]);
  }
  if (envelope.status === 'fail' || !response.ok) {
    throw new ApiFailure(response.status, envelope.error.length > 0 ? envelope.error : [`HTTP ${response.status}`]);
  }
  return envelope;
}

/** An object URL of a collection image's stored bytes (`GET /image`) for a thumbnail; the caller revokes it. */
export async function imageObjectUrl(auth, imName) {
  const query = new URLSearchParams(withAppKey(auth, [['im_name', imName]]));
  const response = await fetch(`/image?${query}`, { headers: authHeaders(auth) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return URL.createObjectURL(await response.blob());
}

/**
 * A call to the admin API (README, Admin API): a JSON body, the admin token as a Bearer, failures as HTTP statuses
 * with the envelope's errors. Answers the JSON body; throws ApiFailure.
 */
export async function callAdmin(token, method, path, body) {
  let response;
  try {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    response = await fetch(path, { method, headers, body: JSON.stringify(body) });
  } catch (error) {
    throw new ApiFailure(0, [`The service could not be reached: ${error.message}`]);
  }
  const answer = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiFailure(response.status, Array.isArray(answer?.error) ? answer.error : [`HTTP ${response.status}`]);
  }
  return answer;
}
