// node cdp-clients.js playwright|puppeteer WS_URL ORIGIN_URL
// Connects the real client library to the sandbox's Chromium over CDP
// (no browser download: the browser is the one in the sandbox), opens
// ORIGIN_URL in a new page, fills the form and submits it, and prints
// "title=<t> done=<text>" from the page the POST answered.
const [kind, ws, url] = process.argv.slice(2);
const npm = process.env.BROWSER_NPM;

async function playwright() {
  const { chromium } = require(`${npm}/node_modules/playwright-core`);
  const browser = await chromium.connectOverCDP(ws, { timeout: 30000 });
  const ctx = browser.contexts()[0] || (await browser.newContext());
  const page = await ctx.newPage();
  await page.goto(url);
  const title = await page.title();
  await page.fill('#q', 'from-playwright');
  await Promise.all([page.waitForNavigation(), page.click('#go')]);
  const done = await page.textContent('#done');
  console.log(`title=${title} done=${done}`);
  await page.close();
  await browser.close();
}

async function puppeteer() {
  const p = require(`${npm}/node_modules/puppeteer-core`);
  const browser = await p.connect({ browserWSEndpoint: ws, protocolTimeout: 30000 });
  const page = await browser.newPage();
  await page.goto(url);
  const title = await page.title();
  await page.type('#q', 'from-puppeteer');
  await Promise.all([page.waitForNavigation(), page.click('#go')]);
  const done = await page.$eval('#done', (e) => e.textContent);
  console.log(`title=${title} done=${done}`);
  await page.close();
  browser.disconnect();
}

(kind === 'playwright' ? playwright() : puppeteer()).then(
  () => process.exit(0),
  (e) => { console.error(e); process.exit(1); });
