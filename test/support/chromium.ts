import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it when missing; CHROMIUM_PATH for another). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Headless, and quiet: this machine's network is closed, so Chromium's own background calls are turned off. */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'];

export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
