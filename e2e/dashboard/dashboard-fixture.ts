// Browser fixtures for the dashboard tests: headless Chromium (Debian's chromium-headless-shell, driven by
// playwright-core, nothing downloaded), one browser per test file and a fresh context (own
// sessionStorage) per test, with everything the page reports that a user would call a failure.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.FFOP_TEST_CHROMIUM ?? '/usr/bin/chromium-headless-shell';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM });
}

export interface DashboardPage {
  page: Page;
  context: BrowserContext;
  /** Uncaught errors, console errors and CSP reports of the page (expected ones filtered by the test). */
  problems: string[];
  /** Dialogs (alert, confirm, prompt) the page opened; each is dismissed. */
  dialogs: string[];
  /** Every response the page got, as `<status> <path>`. */
  answers: string[];
  close(): Promise<void>;
}

export async function openDashboard(browser: Browser, baseUrl: string, options: { bypassCSP?: boolean } = {}): Promise<DashboardPage> {
  const context = await browser.newContext({ baseURL: baseUrl, bypassCSP: options.bypassCSP ?? false });
  const page = await context.newPage();
  const problems: string[] = [];
  const dialogs: string[] = [];
  const answers: string[] = [];
  page.on('response', (res) => answers.push(`${res.status()} ${new URL(res.url()).pathname}`));
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto('/dashboard');
  return { page, context, problems, dialogs, answers, close: () => context.close() };
}

/** Signs in with `key` and waits for the commands page. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.fill('#api-key', key);
  await page.click('form button[type=submit]');
  await page.locator('header.top nav').waitFor();
}

/** Console errors other than the failed requests a test caused on purpose (e.g. a refused key's 401). */
export function unexpected(problems: string[], ...expected: RegExp[]): string[] {
  return problems.filter((p) => !expected.some((e) => e.test(p)));
}
