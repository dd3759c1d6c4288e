// Checks files off the page's thread, so typing never waits for a check. The page sends the
// compiled module first, then file sets; each answer carries its request's id.
import { initSync, validate } from "../pkg/gke_rl_wasm.js";

self.onmessage = ({ data }) => {
  if (data.module) {
    initSync({ module: data.module });
    return;
  }
  self.postMessage({ id: data.id, result: validate(data.files) });
};
