// The web validator in Debian's Chromium, driven by playwright-core.
// usage: node browser.mjs URL OUT_DIR VALID_FILES_JSON FILE_URL (the page opened from its file)
// Prints one JSON object: the codelab findings as the page computed them, and timings.
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";

const [url, outDir, validFilesPath, fileUrl] = process.argv.slice(2);
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
// The strict CSP holds: nothing it blocks is tried.
const watchCsp = (p) => p.addInitScript(() => {
  window.cspViolations = [];
  document.addEventListener("securitypolicyviolation", (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));
});
await watchCsp(page);
await page.goto(url);
await page.waitForSelector("body[data-ready=true]", { timeout: 15000 });

// Every finding is shown in the editor, at its line and column, with its message on hover.
// What the editor shows: each error mark's line, column (in characters) and text.
const marks = () => page.evaluate(() => [...document.getElementById("editor").shadowRoot.querySelectorAll(".cm-lintRange-error")]
  .map((el) => ({ ...window.gkeRl.position(el), text: el.textContent })));
const openTab = (name) => page.locator("[role=tab]", { hasText: name }).click();
// Text replaced as a user does it: select all, then paste.
async function replaceText(text) {
  await page.locator(".cm-content").click();
  await page.keyboard.press("Control+A");
  await page.locator(".cm-content").evaluate((content, text) => {
    const data = new DataTransfer();
    data.setData("text/plain", text);
    content.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}
const editor = () => page.evaluate(() => window.gkeRl.editor());

await page.click("#load-codelab");
const mismatch = page.locator('.diag[data-code="ray-version-mismatch"][data-file="ray-cluster.yaml"]');
await mismatch.first().waitFor({ timeout: 5000 });
// Screen readers hear the counts (a status region), not the whole list after each check.
if (!/^\d+ error\(s\), \d+ warning\(s\)/.test(await page.textContent("#status"))) fail(`the status says ${await page.textContent("#status")}`);
const where = await mismatch.first().evaluate((el) => [el.dataset.line, el.dataset.column]);
if (where.join(":") !== "7:15") fail(`ray-version-mismatch at ${where.join(":")}, expected 7:15`);
// Clicking it opens the file with that line selected.
await mismatch.first().click();
const selected = await editor();
if (selected.file !== "ray-cluster.yaml" || !selected.selection.includes("rayVersion")) fail(`jump selected ${JSON.stringify(selected)}`);
await page.locator(".cm-lintRange-error").first().waitFor({ timeout: 5000 });
const versionMark = (await marks()).find((m) => m.line === 7);
if (!versionMark || versionMark.column !== 15 || versionMark.text !== "'2.54.0'") fail(`the editor marks ${JSON.stringify(await marks())}, expected 7:15 '2.54.0'`);
if (!(await page.locator(".cm-gutter-lint .cm-lint-marker-error").count())) fail("no error in the gutter");
// Each tab counts its errors and its warnings (issue 52: warnings had no badge).
const badges = await page.locator('[role="tab"] .count').evaluateAll((els) => els.map((el) => el.className));
if (!badges.includes("count error") || !badges.includes("count warning")) fail(`the tabs' badges are ${JSON.stringify(badges)}`);
// Its message, help and fix on hover.
await page.evaluate(() => document.getElementById("files-heading").scrollIntoView());
await page.locator(".cm-lintRange-error", { hasText: "'2.54.0'" }).hover();
const tooltip = page.locator(".cm-tooltip-lint");
await tooltip.waitFor({ timeout: 5000 });
const hover = await tooltip.textContent();
if (!hover.includes("[ray-version-mismatch] rayVersion is 2.54.0") || !hover.includes("help: set `rayVersion")) fail(`the hover shows ${hover}`);
await page.screenshot({ path: `${outDir}/codelab.png` });
// The fix is the SDK's edit: applied, the finding goes.
const fix = tooltip.locator(".cm-diagnosticAction");
const fixTitle = await fix.textContent();
if (!fixTitle.startsWith("set rayVersion to")) fail(`the fix is ${fixTitle}`);
await fix.click();
await mismatch.first().waitFor({ state: "detached", timeout: 5000 });
const fixedLine = (await editor()).text.split("\n")[6];
if (!/^ {2}rayVersion: "\d+\.\d+\.\d+"$/.test(fixedLine)) fail(`the fix left line 7 as ${fixedLine}`);
if ((await marks()).some((m) => m.line === 7)) fail("the fixed line is still marked");
// A bad value typed is marked within a second of the last key.
await page.mouse.move(0, 0);
await page.locator(".cm-content .cm-line").nth(6).click();
await page.keyboard.press("End");
await page.keyboard.press("Shift+Home");
await page.keyboard.type('rayVersion: "1.0.0"');
const typed = Date.now();
await page.waitForFunction(() => [...document.getElementById("editor").shadowRoot.querySelectorAll(".cm-lintRange-error")].some((el) => el.textContent === '"1.0.0"'), null, { timeout: 1000 })
  .catch(() => fail("no mark within a second of typing a bad rayVersion"));
const markedAfterMs = Date.now() - typed;
// The KubeRay CRD is checked here too, as by the CLI: a misspelt field, typed in, is an error at
// its line and column.
const original = (await editor()).text;
const misspeltAt = original.split("\n").findIndex((l) => l.includes("rayStartParams:")) + 1;
await replaceText(original.replace("rayStartParams:", "rayStartParam:"));
const crd = page.locator('.diag[data-code="crd-schema"][data-file="ray-cluster.yaml"]');
await crd.first().waitFor({ timeout: 5000 });
const crdAt = await crd.first().evaluate((el) => [el.dataset.line, el.dataset.column, el.textContent]);
const column = original.split("\n")[misspeltAt - 1].indexOf("rayStartParams") + 1;
if (crdAt[0] !== String(misspeltAt) || crdAt[1] !== String(column) || !crdAt[2].includes("did you mean `rayStartParams`"))
  fail(`the misspelt field is reported as ${JSON.stringify(crdAt)}, expected ${misspeltAt}:${column}`);
await replaceText(original);
await crd.first().waitFor({ state: "detached", timeout: 5000 });
if ((await editor()).text !== original) fail("pasting the original text back did not restore it");
// What could not be checked is said, as the CLI says it: the codelab has no blueprint.
const coverage = await page.textContent("#coverage");
const coverageShown = /Checked with \d+ of \d+ rules/.test(coverage) && coverage.includes("Not checked: blueprint-spot-with-reservation");
if (!coverageShown) fail(`the page does not list what it could not check: ${coverage}`);

// By keyboard: focus a diagnostic and press Enter; in the editor, Ctrl-Shift-M lists the file's
// findings in the lint panel, a list a screen reader reads.
await page.locator('.diag[data-code="override-no-op"]').first().focus();
await page.keyboard.press("Enter");
if ((await page.inputValue("#file-name")) !== "run_nemo_rl.sh") fail("Enter on a diagnostic does not open its file");
await page.keyboard.press("Control+Shift+M");
const panel = page.locator('.cm-panel-lint ul[role="listbox"]');
await panel.waitFor({ timeout: 5000 });
if (!(await panel.getAttribute("aria-label")) || !(await panel.locator('[role="option"]').count())) fail("the lint panel lists no findings");
await page.keyboard.press("Escape");
if (!(await page.evaluate(() => window.gkeRl.worker()))) fail("checking does not run in a worker");

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
// Its long lines scroll inside it: it never overflows the page (issue 52).
const overflow = await page.evaluate(() => {
  const block = document.querySelector("#render-result #cost");
  return block.getBoundingClientRect().right - document.documentElement.clientWidth;
});
if (overflow > 0) fail(`the cost block runs ${overflow}px past the page`);
// A cluster gke-rl did not create (issue 53): no gcluster deployment file, the head on the pool named.
await page.fill("#config", "project:\n  existing_cluster: true\nray:\n  head:\n    pool: cpu-np\n");
await page.click("#render");
await page.locator("#render-result #cost").waitFor({ timeout: 5000 });
const existingNames = await page.locator("#render-result a[download]").evaluateAll((as) => as.map((a) => a.getAttribute("download")));
if (existingNames.includes("gke-a4-deployment.yaml") || existingNames.length !== 7)
  fail(`rendering for an existing cluster gave ${JSON.stringify(existingNames)}`);
const existingRender = await page.evaluate(() => window.gkeRl.render("project:\n  existing_cluster: true\nray:\n  head:\n    pool: cpu-np\n"));
const existingCluster = existingRender.artifacts?.find((a) => a.name === "ray-cluster.yaml")?.contents ?? "";
if (!existingCluster.includes("cloud.google.com/gke-nodepool: cpu-np")) fail("the existing cluster's RayCluster does not select pool cpu-np");
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

// Opened from its file, with no server: the editor and its marks, and the renderer, still work.
const local = await browser.newPage();
const localRequests = [];
local.on("request", (r) => localRequests.push(r.url()));
local.on("pageerror", (e) => errors.push(`file://: ${e}`));
await watchCsp(local);
await local.goto(fileUrl);
await local.waitForSelector("body[data-ready=true]", { timeout: 15000 });
await local.click("#load-codelab");
await local.locator("[role=tab]", { hasText: "ray-cluster.yaml" }).click();
await local.locator(".cm-lintRange-error", { hasText: "'2.54.0'" }).waitFor({ timeout: 5000 });
await local.click("#render");
await local.locator("#render-result #cost").waitFor({ timeout: 10000 });
const violations = [...await page.evaluate(() => window.cspViolations), ...(await local.evaluate(() => window.cspViolations)).map((v) => `file://: ${v}`)];
const localForeign = localRequests.filter((r) => !r.startsWith("file:") && !r.startsWith("blob:") && !r.startsWith("data:"));
if (localForeign.length) fail(`requests left the page opened from its file: ${localForeign.join(", ")}`);

const foreign = requests.filter((r) => !r.startsWith(origin) && !r.startsWith("blob:") && !r.startsWith("data:"));
if (foreign.length) fail(`requests left the page: ${foreign.join(", ")}`);
if (errors.length) fail(`page errors: ${errors.join("; ")}`);
if (violations.length) fail(`the page tries what its CSP blocks: ${violations.join("; ")}`);
await browser.close();
console.log(JSON.stringify({ codelab: inBrowser, valid: validFindings, validate_median_ms: timing, marked_after_ms: markedAfterMs, requests: requests.length, coverage_shown: coverageShown }));
