// The page: files in, findings out, all in the browser through the SDK compiled to wasm. Each
// file is open in a code editor with its findings in place; checking runs in a worker.
import { EditorState } from "@codemirror/state";
import {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter, drawSelection, highlightSpecialChars,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { StreamLanguage, syntaxHighlighting, defaultHighlightStyle, bracketMatching } from "@codemirror/language";
import { lintGutter, lintKeymap, setDiagnostics, openLintPanel } from "@codemirror/lint";
import { yaml } from "@codemirror/lang-yaml";
import { json } from "@codemirror/lang-json";
import { shell } from "@codemirror/legacy-modes/mode/shell";
import { initSync, validate, version } from "../pkg/gke_rl_wasm.js";
import initRenderer, { render as renderWasm } from "../pkg/gke_rl_render.js";
import { codelab } from "../pkg/examples.js";
import { compiled } from "./wasm.js";

const files = new Map(); // name -> text, in the order added
const states = new Map(); // name -> the editor's state of that file (its undo history)
let active = null;
const $ = (id) => document.getElementById(id);

// ---- Checking: in a worker where the page may start one (not from file://), else here.

let worker = null;
const waiting = new Map(); // request id -> resolve
let requests = 0;

async function startChecking() {
  const module = await compiled("gke_rl_wasm");
  initSync({ module });
  try {
    worker = new Worker("pkg/worker.js");
  } catch {
    return;
  }
  worker.postMessage({ module });
  worker.onmessage = ({ data }) => {
    waiting.get(data.id)?.resolve(data.result);
    waiting.delete(data.id);
  };
  // A worker that fails (a crash, a message it cannot read) hands checking back to the page.
  worker.onerror = worker.onmessageerror = () => {
    worker = null;
    for (const { resolve, input } of waiting.values()) resolve(checkHere(input));
    waiting.clear();
  };
}

function filesObject() {
  return Object.fromEntries(files);
}

function checkHere(input) {
  try {
    return validate(input);
  } catch (e) {
    return { error: `the validator failed: ${e}` };
  }
}

function check(input) {
  if (!worker) return Promise.resolve(checkHere(input));
  const id = ++requests;
  return new Promise((resolve) => {
    waiting.set(id, { resolve, input });
    worker.postMessage({ id, files: input });
  });
}

// ---- The editor.

function language(name) {
  if (/\.ya?ml$/.test(name)) return yaml();
  if (name.endsWith(".json")) return json();
  if (name.endsWith(".sh")) return StreamLanguage.define(shell);
  return [];
}

let pending;
// In a shadow root, CodeMirror's styles are constructed style sheets, which the page's CSP
// (style-src 'self') allows; in the document it would write <style> elements, which it blocks.
const shadow = $("editor").attachShadow({ mode: "open" });
const view = new EditorView({ parent: shadow, root: shadow });
const look = EditorView.theme({
  "&": { height: "26rem" },
  ".cm-scroller": { fontFamily: "ui-monospace, monospace", fontSize: "13px", lineHeight: "1.4" },
  ".cm-tooltip-lint, .cm-panel-lint .cm-diagnosticText": { whiteSpace: "pre-wrap" },
  ".cm-tooltip-lint": { maxWidth: "40rem" },
});

function stateOf(name) {
  return EditorState.create({
    doc: files.get(name),
    extensions: [
      // Lines end at `\n` only, as the SDK counts them; a `\r` stays in the text it checks.
      EditorState.lineSeparator.of("\n"),
      lineNumbers(),
      highlightActiveLineGutter(),
      highlightSpecialChars(),
      history(),
      drawSelection(),
      syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
      bracketMatching(),
      highlightActiveLine(),
      lintGutter(),
      look,
      keymap.of([...defaultKeymap, ...historyKeymap, ...lintKeymap]),
      language(name),
      EditorView.contentAttributes.of({ "aria-label": `Contents of ${name}` }),
      // Files dropped on the editor are added as files (the page's drop handler), not pasted in.
      EditorView.domEventHandlers({ drop: (e) => e.dataTransfer?.files?.length > 0 }),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        files.set(name, update.state.doc.toString());
        // Checked once typing pauses.
        clearTimeout(pending);
        pending = setTimeout(refresh, 150);
      }),
    ],
  });
}

function showFile(name) {
  if (active !== null && active !== name && files.has(active)) states.set(active, view.state);
  active = name;
  $("editor-wrap").hidden = name === null;
  if (name === null) return;
  $("file-name").value = name;
  view.setState(states.get(name) ?? stateOf(name));
}

// A finding's line and column count characters; the editor counts UTF-16 units.
function offset(doc, line, column) {
  const l = doc.line(Math.min(Math.max(line, 1), doc.lines));
  let at = l.from;
  for (const c of Array.from(l.text).slice(0, Math.max(column - 1, 0))) at += c.length;
  return Math.min(at, l.to);
}

// The finding's value: from its column to the end of the word there.
function extent(doc, from) {
  const line = doc.lineAt(from);
  const rest = line.text.slice(from - line.from);
  const word = rest.match(/^\S+/);
  return from + (word ? word[0].length : 0);
}

// The findings of the active file as the editor's diagnostics, on `doc`, the text checked. A fix
// edits that text only: once the text changes, until it is checked again, it does nothing.
function editorDiagnostics(findings, doc) {
  return findings
    .filter((f) => f.file === active)
    .map((f) => {
      const from = offset(doc, f.line, f.column);
      const diagnostic = {
        from,
        to: extent(doc, from),
        severity: f.severity,
        message: `[${f.code}] ${f.message}\nhelp: ${f.help}`,
      };
      if (f.fix) {
        diagnostic.actions = [{
          name: f.fix.title,
          apply(view) {
            if (view.state.doc !== doc) return;
            const start = offset(doc, f.fix.line, f.fix.column);
            const end = f.fix.end_line > doc.lines ? doc.length : offset(doc, f.fix.end_line, f.fix.end_column);
            view.dispatch({ changes: { from: start, to: end, insert: f.fix.text } });
          },
        }];
      }
      return diagnostic;
    });
}

// ---- The page around it.

let checks = 0;
async function refresh() {
  const mine = ++checks;
  const input = filesObject();
  const doc = view.state.doc;
  const result = files.size ? await check(input) : { findings: [], skipped: [] };
  if (mine !== checks) return; // a later check's result wins
  const findings = result.error ? result : result.findings;
  drawTabs(findings);
  drawDiagnostics(findings);
  drawCoverage(result);
  // Marks go on the text they were found in; typed since, it is checked again (pending).
  if (active !== null && view.state.doc === doc) {
    view.dispatch(setDiagnostics(view.state, Array.isArray(findings) ? editorDiagnostics(findings, doc) : []));
  }
}

function setFiles(entries) {
  files.clear();
  states.clear();
  active = null; // its editor state is of the files replaced
  for (const [name, text] of entries) files.set(name, text);
  showFile(files.keys().next().value ?? null);
  refresh();
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
  // Redrawn after each check: a focused tab keeps the focus.
  const focused = tabs.contains(document.activeElement) ? document.activeElement.dataset.name : null;
  tabs.replaceChildren();
  for (const name of files.keys()) {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-selected", String(name === active));
    tab.textContent = name;
    // A badge per severity that has findings in the file: errors, then warnings.
    for (const [severity, noun] of [["error", "error"], ["warning", "warning"]]) {
      const n = Array.isArray(findings) ? findings.filter((f) => f.file === name && f.severity === severity).length : 0;
      if (!n) continue;
      const badge = document.createElement("span");
      badge.className = `count ${severity}`;
      badge.textContent = n;
      badge.title = `${n} ${noun}${n === 1 ? "" : "s"}`;
      tab.append(badge);
    }
    tab.dataset.name = name;
    tab.addEventListener("click", () => { showFile(name); refresh(); });
    tabs.append(tab);
    if (name === focused) tab.focus();
  }
}

function drawDiagnostics(findings) {
  const box = $("diagnostics");
  box.replaceChildren();
  if (!Array.isArray(findings)) {
    const p = document.createElement("p");
    p.className = "error-text";
    p.textContent = findings.error;
    box.append(p);
    $("status").textContent = findings.error;
    return;
  }
  const count = (s) => findings.filter((f) => f.severity === s).length;
  const summary = files.size ? `${count("error")} error(s), ${count("warning")} warning(s), ${count("info")} info` : "";
  $("summary").textContent = summary && `— ${summary}`;
  // Screen readers hear the counts when they change, not the whole list after each check.
  if ($("status").textContent !== summary) $("status").textContent = summary;
  if (files.size && !findings.length) box.textContent = "No findings.";
  const byFile = new Map();
  for (const f of findings) byFile.set(f.file, [...(byFile.get(f.file) ?? []), f]);
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
      for (const [part, text] of [["sev", f.severity], ["where", `${f.file}:${f.line}:${f.column} [${f.code}]`], ["msg", f.message], ["help", `help: ${f.help}`]]) {
        const span = document.createElement("span");
        span.className = part;
        span.textContent = text;
        item.append(span);
      }
      item.addEventListener("click", () => jumpTo(f));
      section.append(item);
    }
    box.append(section);
  }
}

/// Shows the file with the cursor at the finding, its line selected.
function jumpTo(f) {
  if (!files.has(f.file)) return;
  if (f.file !== active) {
    showFile(f.file);
    refresh();
  }
  const line = view.state.doc.line(Math.min(f.line, view.state.doc.lines));
  view.dispatch({ selection: { anchor: line.from, head: line.to }, scrollIntoView: true });
  view.focus();
}

async function addFiles(list) {
  // Read first, then replace at once: nothing typed in between is lost to a stale state.
  const texts = await Promise.all(list.map((file) => file.text()));
  list.forEach((file, i) => {
    files.set(file.name, texts[i]);
    states.delete(file.name);
    if (file.name === active) active = null; // its editor state is of the text replaced
  });
  if (list.length) showFile(list[list.length - 1].name);
  refresh();
}

// ---- Rendering a config. The renderer is a second file, from this page's own origin, loaded
// the first time it is used.

let renderer;
async function render(config) {
  if (!renderer) {
    const loading = compiled("gke_rl_render").then((module) => initRenderer({ module_or_path: module }));
    renderer = loading;
    loading.catch(() => {
      if (renderer === loading) renderer = undefined; // the next render tries again
    });
  }
  try {
    await renderer;
  } catch (e) {
    return { error: { message: `the renderer did not load: ${e}` } };
  }
  return renderWasm(config);
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
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Check these artifacts";
  button.addEventListener("click", () => setFiles(result.artifacts.map((a) => [a.name, a.contents])));
  box.append(button);
}

async function start() {
  await startChecking();
  $("version").textContent = `gke-rl ${version()}`;
  $("load-codelab").addEventListener("click", () => setFiles(Object.entries(codelab)));
  $("open").addEventListener("change", (e) => addFiles([...e.target.files]));
  $("add").addEventListener("click", () => {
    let name = "untitled.yaml";
    for (let i = 2; files.has(name); i++) name = `untitled-${i}.yaml`;
    files.set(name, "");
    showFile(name);
    refresh();
    $("file-name").focus();
  });
  $("clear").addEventListener("click", () => setFiles([]));
  $("file-name").addEventListener("change", (e) => {
    const name = e.target.value.trim();
    if (!name || name === active || files.has(name)) return;
    const entries = [...files].map(([n, t]) => [n === active ? name : n, t]);
    files.clear();
    for (const [n, t] of entries) files.set(n, t);
    states.delete(active);
    active = null;
    showFile(name);
    refresh();
  });
  $("show-panel").addEventListener("click", () => openLintPanel(view));
  $("render").addEventListener("click", renderConfig);
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => { e.preventDefault(); addFiles([...e.dataTransfer.files]); });
  showFile(null);

  // For the browser test and `cargo xtask bench wasm`: the wasm functions, and where the editor is.
  window.gkeRl = {
    validate,
    render,
    worker: () => worker !== null,
    editor: () => ({ file: active, text: view.state.doc.toString(), selection: view.state.sliceDoc(view.state.selection.main.from, view.state.selection.main.to) }),
    // Where an element of the editor starts: line and column, in characters.
    position: (element) => {
      const at = view.posAtDOM(element);
      const line = view.state.doc.lineAt(at);
      return { line: line.number, column: Array.from(line.text.slice(0, at - line.from)).length + 1 };
    },
    ready: true,
  };
  document.body.dataset.ready = "true";
}

start().catch((e) => {
  const p = document.createElement("p");
  p.className = "error-text";
  p.textContent = `The validator did not start: ${e}`;
  $("diagnostics").replaceChildren(p);
});
