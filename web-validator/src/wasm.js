// The compiled wasm of a build in pkg/ (`gke_rl_wasm`, `gke_rl_render`). A server gives the file
// itself; a page opened from file:// may fetch nothing, so there the same bytes come as a
// classic script beside it (pkg/NAME_bg.wasm.js, written by `cargo xtask wasm`).
export async function compiled(name) {
  let bytes;
  try {
    const response = await fetch(`pkg/${name}_bg.wasm`);
    if (!response.ok) throw new Error(`pkg/${name}_bg.wasm: HTTP ${response.status}`);
    bytes = await response.arrayBuffer();
  } catch (fetchError) {
    if (location.protocol !== "file:") throw fetchError;
    await classicScript(`pkg/${name}_bg.wasm.js`);
    bytes = Uint8Array.from(atob(globalThis.gkeRlWasm[name]), (c) => c.charCodeAt(0));
  }
  return WebAssembly.compile(bytes);
}

function classicScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`${src} did not load`));
    document.head.append(script);
  });
}
