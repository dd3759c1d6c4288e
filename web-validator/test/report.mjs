// The run report's page in Debian's Chromium, driven by playwright-core, opened from its file.
// usage: node report.mjs REPORT_HTML OUT_DIR
// Prints one JSON object: the page's sections, each plot's drawn shapes, every request the page
// made (the page itself only) and its errors; leaves a full-page screenshot in OUT_DIR.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [reportPath, outDir] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
const requests = [];
page.on("request", (r) => requests.push(r.url()));
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
const url = pathToFileURL(reportPath).href;
await page.goto(url);
await page.screenshot({ path: `${outDir}/report.png`, fullPage: true });
const sections = await page.evaluate(() => [...document.querySelectorAll("section")].map((s) => s.id));
const plots = await page.evaluate(() => [...document.querySelectorAll("svg")].map((svg) => ({
  section: svg.closest("section")?.id ?? "",
  width: svg.getBoundingClientRect().width,
  shapes: svg.querySelectorAll("rect, polyline, path, circle, line").length,
  texts: svg.querySelectorAll("text").length,
})));
await browser.close();
console.log(JSON.stringify({ url, sections, plots, requests, errors }));
