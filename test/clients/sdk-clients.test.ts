import { after, before, describe } from 'node:test';
import { browserSdkSuite } from './browser-sdk.ts';
import { javaSdkSuite } from './java-sdk.ts';
import { javascriptSdkSuite } from './javascript-sdk.ts';
import { mobileSdksSuite } from './mobile-sdks.ts';
import { pythonSdkSuite } from './python-sdk.ts';
import { startClientStack, type ClientStack } from './stack.ts';

/**
 * Client compatibility (`npm run test:clients`): the official ViSearch SDKs against the local stack, unchanged. The
 * JavaScript SDK runs for real, in Node and in a web page; the Python, Java, Android and iOS SDKs are replayed as
 * they put each call on the wire, and their answers checked as each reads them. One stack for all of them.
 */

let stack: ClientStack | undefined;
const current = (): ClientStack => stack ?? (() => { throw new Error('the stack did not start'); })();

describe('official client SDKs', () => {
  before(async () => {
    stack = await startClientStack();
  }, { timeout: 300_000 });
  after(async () => {
    await stack?.stop();
  });

  javascriptSdkSuite(current);
  pythonSdkSuite(current);
  javaSdkSuite(current);
  mobileSdksSuite(current);
  browserSdkSuite(current);
});
