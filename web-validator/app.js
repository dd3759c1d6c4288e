// The page: files in, diagnostics out, all in the browser through the SDK compiled to wasm.
import init, { validate, version } from "./pkg/gke_rl_wasm.js";
import { codelab } from "./pkg/examples.js";

const files = new Map(); // name -> text, in the order added
let active = null;
const $ = (id) => document.getElementById(id);

function setFiles(entries) {
  files.clear();
  for (const [name, text] of entries) files.set(name, text);
  active = files.keys().next().value ?? null;
  refresh();
}

function refresh() {
  const result = files.size ? validate(Object.fromEntries(files)) : { findings: [], skipped: [] };
  const findings = result.error ? result : result.findings;
  drawTabs(findings);
  drawEditor();
  drawDiagnostics(findings);
  drawCoverage(result);
}

/// What could not be checked, grouped by what would let it: the same list the CLI ends with.
function drawCoverage(result) {
  const box = $("coverage");
  box.replaceChildren();
  if (!files.size || result.error) return;
  const head = document.createElement("p");
  head.textContent = `Checked with ${result.rules_checked} of ${result.rules} rules.`;
  box.append(head);
  const groups = new Map();
  for (const s of result.skipped) {
    const key = `${s.missing} (${s.enable})`;
    groups.set(key, [...(groups.get(key) ?? []), s.code]);
  }
  if (!groups.size) return;
  const list = document.createElement("ul");
  list.setAttribute("aria-label", "Not checked");
  for (const [why, codes] of groups) {
    const item = document.createElement("li");
    item.className = "skipped";
    item.textContent = `Not checked: ${codes.join(", ")}: ${why}`;
    list.append(item);
  }
  box.append(list);
}

function drawTabs(findings) {
  const tabs = $("tabs");
  tabs.replaceChildren();
  for (const name of files.keys()) {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-selected", String(name === active));
    tab.textContent = name;
    const errors = Array.isArray(findings) ? findings.filter((f) => f.file === name && f.severity === "error").length : 0;
    if (errors) {
      const badge = document.createElement("span");
      badge.className = "count";
      badge.textContent = errors;
      badge.title = `${errors} error(s)`;
      tab.append(badge);
    }
    tab.addEventListener("click", () => { active = name; refresh(); });
    tabs.append(tab);
  }
}

function drawEditor() {
  const wrap = $("editor-wrap");
  wrap.hidden = active === null;
  if (active === null) return;
  $("file-name").value = active;
  if ($("editor").value !== files.get(active)) $("editor").value = files.get(active);
}

function drawDiagnostics(findings) {
  const box = $("diagnostics");
  box.replaceChildren();
  if (!Array.isArray(findings)) {
    box.innerHTML = `<p class="error-text"></p>`;
    box.firstChild.textContent = findings.error;
    return;
  }
  const count = (s) => findings.filter((f) => f.severity === s).length;
  $("summary").textContent = files.size
    ? `— ${count("error")} error(s), ${count("warning")} warning(s), ${count("info")} info`
    : "";
  if (files.size && !findings.length) box.textContent = "No findings.";
  const byFile = Map.groupBy ? Map.groupBy(findings, (f) => f.file) : group(findings);
  for (const [file, list] of byFile) {
    const section = document.createElement("div");
    section.className = "group";
    const title = document.createElement("h3");
    title.textContent = file;
    section.append(title);
    for (const f of list) {
      const item = document.createElement("button");
      item.type = "button";
      item.className = `diag ${f.severity}`;
      item.dataset.code = f.code;
      item.dataset.file = f.file;
      item.dataset.line = f.line;
      item.dataset.column = f.column;
      item.innerHTML = `<span class="sev"></span><span class="where"></span><span class="msg"></span><span class="help"></span>`;
      item.querySelector(".sev").textContent = f.severity;
      item.querySelector(".where").textContent = `${f.file}:${f.line}:${f.column} [${f.code}]`;
      item.querySelector(".msg").textContent = f.message;
      item.querySelector(".help").textContent = `help: ${f.help}`;
      item.addEventListener("click", () => jumpTo(f));
      section.append(item);
    }
    box.append(section);
  }
}

function group(findings) {
  const map = new Map();
  for (const f of findings) map.set(f.file, [...(map.get(f.file) ?? []), f]);
  return map;
}

/// Shows the file and selects the offending line, cursor at the column.
function jumpTo(f) {
  if (!files.has(f.file)) return;
  active = f.file;
  refresh();
  const editor = $("editor");
  const lines = editor.value.split("\n");
  const start = lines.slice(0, f.line - 1).reduce((n, l) => n + l.length + 1, 0);
  const end = start + (lines[f.line - 1] ?? "").length;
  editor.focus();
  editor.setSelectionRange(start, end);
  const lineHeight = parseFloat(getComputedStyle(editor).lineHeight) || 18;
  editor.scrollTop = Math.max(0, (f.line - 5) * lineHeight);
}

async function addFiles(list) {
  for (const file of list) files.set(file.name, await file.text());
  active = list.length ? list[list.length - 1].name : active;
  refresh();
}

// The renderer is a second file, from this page's own origin, fetched the first time it is used.
let renderer;
let failedLoads = 0;
async function render(config) {
  if (!renderer) {
    // A retry asks for the module anew: a browser may remember a failed import.
    const url = failedLoads ? `./pkg/gke_rl_render.js?retry=${failedLoads}` : "./pkg/gke_rl_render.js";
    const loading = import(url).then(async (module) => { await module.default(); return module; });
    renderer = loading;
    loading.catch(() => {
      if (renderer === loading) { renderer = undefined; failedLoads++; } // the next render tries again
    });
  }
  let module;
  try {
    module = await renderer;
  } catch (e) {
    return { error: { message: `the renderer did not load: ${e}` } };
  }
  return module.render(config);
}

let renders = 0;
async function renderConfig() {
  const mine = ++renders;
  const result = await render($("config").value);
  if (mine !== renders) return; // a later click's result wins
  const box = $("render-result");
  box.replaceChildren();
  if (result.error) {
    const p = document.createElement("p");
    p.className = "error-text";
    const e = result.error;
    p.textContent = e.line ? `gke-rl.yaml:${e.line}:${e.column}: ${e.message} (help: ${e.help})` : e.message;
    box.append(p);
    return;
  }
  for (const artifact of result.artifacts) {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([artifact.contents], { type: "text/plain" }));
    link.download = artifact.name;
    link.textContent = artifact.name;
    box.append(link);
  }
  const cost = document.createElement("pre");
  cost.id = "cost";
  cost.textContent = result.cost.text;
  box.append(cost);
  const check = document.createElement("button");
  check.type = "button";
  check.textContent = "Check these artifacts";
  check.addEventListener("click", () => setFiles(result.artifacts.map((a) => [a.name, a.contents])));
  box.append(check);
}

await init();
$("version").textContent = `gke-rl ${version()}`;
$("load-codelab").addEventListener("click", () => setFiles(Object.entries(codelab)));
$("open").addEventListener("change", (e) => addFiles([...e.target.files]));
$("add").addEventListener("click", () => {
  let name = "untitled.yaml";
  for (let i = 2; files.has(name); i++) name = `untitled-${i}.yaml`;
  files.set(name, "");
  active = name;
  refresh();
  $("file-name").focus();
});
$("clear").addEventListener("click", () => setFiles([]));
let pending;
$("editor").addEventListener("input", (e) => {
  files.set(active, e.target.value);
  clearTimeout(pending);
  pending = setTimeout(refresh, 150);
});
$("file-name").addEventListener("change", (e) => {
  const name = e.target.value.trim();
  if (!name || name === active || files.has(name)) return;
  const entries = [...files].map(([n, t]) => [n === active ? name : n, t]);
  files.clear();
  for (const [n, t] of entries) files.set(n, t);
  active = name;
  refresh();
});
$("render").addEventListener("click", renderConfig);
document.addEventListener("dragover", (e) => e.preventDefault());
document.addEventListener("drop", (e) => { e.preventDefault(); addFiles([...e.dataTransfer.files]); });

// For the browser test and `cargo xtask bench wasm`: the wasm functions themselves.
window.gkeRl = { validate, render, ready: true };
document.body.dataset.ready = "true";
