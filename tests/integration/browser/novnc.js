// node novnc.js URL SHOT: noVNC (Debian's /usr/share/novnc, served by the
// test) in a headless Chromium on the host, through playwright-core with
// the host's /usr/bin/chromium; waits until noVNC says it is connected,
// saves a screenshot of the page to SHOT and prints the RGB of the remote
// desktop's centre as drawn on noVNC's canvas.
const { chromium } = require(`${process.env.BROWSER_NPM}/node_modules/playwright-core`);
const [url, shot] = process.argv.slice(2);
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const p = await b.newPage({ viewport: { width: 1280, height: 800 } });
  await p.goto(url);
  let px = null;
  for (let i = 0; i < 100 && !px; i++) {
    await p.waitForTimeout(200);
    px = await p.evaluate(() => {
      const c = document.querySelector('#noVNC_container canvas, canvas');
      if (!c || c.width < 100) return null;
      const d = c.getContext('2d').getImageData(c.width >> 1, c.height >> 1, 1, 1).data;
      return d[0] + d[1] + d[2] > 0 ? [d[0], d[1], d[2]] : null;
    });
  }
  await p.screenshot({ path: shot });
  console.log(px ? px.join(' ') : 'blank');
  await b.close();
})().catch((e) => { console.error(e); process.exit(1); });
