// The web validator in Debian's Chromium, driven by playwright-core.
// usage: node browser.mjs URL OUT_DIR VALID_FILES_JSON
// Prints one JSON object: the codelab findings as the page computed them, and timings.
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";

const [url, outDir, validFilesPath] = process.argv.slice(2);
const origin = new URL(url).origin;
const fail = (message) => { console.error(`browser test: ${message}`); process.exit(1); };

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
const requests = [];
page.on("request", (r) => requests.push(r.url()));
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
await page.goto(url);
await page.waitForSelector("body[data-ready=true]", { timeout: 15000 });

// The codelab example: the Ray version mismatch is reported on the right line.
await page.click("#load-codelab");
const mismatch = page.locator('.diag[data-code="ray-version-mismatch"][data-file="ray-cluster.yaml"]');
await mismatch.first().waitFor({ timeout: 5000 });
const where = await mismatch.first().evaluate((el) => [el.dataset.line, el.dataset.column]);
if (where.join(":") !== "7:15") fail(`ray-version-mismatch at ${where.join(":")}, expected 7:15`);
// Clicking it selects that line in the editor.
await mismatch.first().click();
const selected = await page.evaluate(() => {
  const e = document.getElementById("editor");
  return { file: document.getElementById("file-name").value, text: e.value.slice(e.selectionStart, e.selectionEnd) };
});
if (selected.file !== "ray-cluster.yaml" || !selected.text.includes("rayVersion")) fail(`jump selected ${JSON.stringify(selected)}`);
await page.screenshot({ path: `${outDir}/codelab.png`, fullPage: true });
// The KubeRay CRD is checked here too, as by the CLI: a misspelt field, typed in, is an error at
// its line and column.
const original = await page.inputValue("#editor");
const misspeltAt = original.split("\n").findIndex((l) => l.includes("rayStartParams:")) + 1;
await page.fill("#editor", original.replace("rayStartParams:", "rayStartParam:"));
const crd = page.locator('.diag[data-code="crd-schema"][data-file="ray-cluster.yaml"]');
await crd.first().waitFor({ timeout: 5000 });
const crdAt = await crd.first().evaluate((el) => [el.dataset.line, el.dataset.column, el.textContent]);
const column = original.split("\n")[misspeltAt - 1].indexOf("rayStartParams") + 1;
if (crdAt[0] !== String(misspeltAt) || crdAt[1] !== String(column) || !crdAt[2].includes("did you mean `rayStartParams`"))
  fail(`the misspelt field is reported as ${JSON.stringify(crdAt)}, expected ${misspeltAt}:${column}`);
await page.fill("#editor", original);
await crd.first().waitFor({ state: "detached", timeout: 5000 });
// What could not be checked is said, as the CLI says it: the codelab has no blueprint.
const coverage = await page.textContent("#coverage");
const coverageShown = /Checked with \d+ of \d+ rules/.test(coverage) && coverage.includes("Not checked: blueprint-spot-with-reservation");
if (!coverageShown) fail(`the page does not list what it could not check: ${coverage}`);

// By keyboard: focus a diagnostic and press Enter.
await page.locator('.diag[data-code="override-no-op"]').first().focus();
await page.keyboard.press("Enter");
if ((await page.inputValue("#file-name")) !== "run_nemo_rl.sh") fail("Enter on a diagnostic does not open its file");

// Rendering a config: the artifacts to download, or the config error with its line.
if (requests.some((r) => r.includes("gke_rl_render"))) fail("the renderer was fetched before a config was rendered");
await page.click("#render");
// The renderer is the page's second file, fetched now.
await page.locator("#render-result #cost").waitFor({ timeout: 5000 });
if (!requests.some((r) => r.endsWith("/pkg/gke_rl_render_bg.wasm"))) fail("rendering did not fetch the renderer");
const links = await page.locator("#render-result a[download]").count();
// Seven artifacts, and the NetworkPolicy of the default image's Ray 2.46 (no token authentication).
if (links !== 8) fail(`rendering the default gave ${links} download links, expected 8`);
const cost = await page.textContent("#render-result #cost");
if (!cost.includes("total, at least") || !cost.includes("$262.97/hour") || !cost.includes("skypilot-catalog"))
  fail(`the default's cost block is ${cost}`);
await page.fill("#config", "project:\n  nope: 1\n");
await page.click("#render");
await page.locator("#render-result .error-text").waitFor({ timeout: 5000 });
const renderError = await page.textContent("#render-result");
if (!renderError.includes("gke-rl.yaml:2:3")) fail(`a bad config shows ${renderError}`);

// A valid render: no errors.
const valid = JSON.parse(readFileSync(validFilesPath, "utf8"));
const validFindings = await page.evaluate((files) => window.gkeRl.validate(files), valid);
const validErrors = validFindings.findings.filter((f) => f.severity === "error");
if (validErrors.length) fail(`the valid render has errors: ${JSON.stringify(validErrors)}`);

// Bad input is a value with an error, never an exception: a list, a number, a file that is not text.
for (const bad of [["x"], 7, { "env.sh": 1 }, null]) {
  const result = await page.evaluate((input) => window.gkeRl.validate(input), bad);
  if (!String(result?.error).startsWith("validate takes an object")) fail(`validate(${JSON.stringify(bad)}) gives ${JSON.stringify(result)}`);
}

// The same inputs, for the native comparison, and the time validate takes here.
const codelab = await page.evaluate(async () => (await import("./pkg/examples.js")).codelab);
const inBrowser = await page.evaluate((files) => window.gkeRl.validate(files), codelab);
// performance.now() is coarse in browsers (0.1 ms), so time batches of 20 and take the median.
const timing = await page.evaluate((files) => {
  const batches = [];
  for (let i = 0; i < 25; i++) {
    const start = performance.now();
    for (let j = 0; j < 20; j++) window.gkeRl.validate(files);
    batches.push((performance.now() - start) / 20);
  }
  batches.sort((a, b) => a - b);
  return batches[batches.length >> 1];
}, valid);

const foreign = requests.filter((r) => !r.startsWith(origin) && !r.startsWith("blob:") && !r.startsWith("data:"));
if (foreign.length) fail(`requests left the page: ${foreign.join(", ")}`);
if (errors.length) fail(`page errors: ${errors.join("; ")}`);
await browser.close();
console.log(JSON.stringify({ codelab: inBrowser, valid: validFindings, validate_median_ms: timing, requests: requests.length, coverage_shown: coverageShown }));
