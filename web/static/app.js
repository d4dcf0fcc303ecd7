// govgate admin: small progressive enhancements. Every page works without
// this file except chain editing and the try-it panel; with it, pages
// refresh themselves and talk to the admin API with the session cookie and
// the CSRF token.
(function () {
  "use strict";

  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  // h builds an element; children are nodes or text (never parsed as HTML).
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const tones = {
    ok: ["keep", "kept", "transform", "transformed", "succeeded", "pass", "ok", "active", "enabled"],
    warn: ["error-open", "retry", "pending"],
    bad: ["drop", "dropped", "error-closed", "fail", "failed", "error"],
  };
  const labels = {
    kept: "Kept", keep: "Kept", transformed: "Transformed", transform: "Transformed", dropped: "Dropped", drop: "Dropped",
    "error-open": "Error: skipped (fail open)", "error-closed": "Error: held (fail closed)",
  };
  function badge(state, text) {
    let tone = "muted";
    for (const [t, list] of Object.entries(tones)) if (list.includes(String(state))) tone = t;
    const icon = { ok: "✓", warn: "!", bad: "✕", muted: "–" }[tone];
    return h("span", { class: "badge badge-" + tone }, h("span", { "aria-hidden": "true" }, icon), " " + (text || labels[state] || state));
  }

  // api calls the admin JSON API and returns the decoded answer, or throws
  // an Error whose message can be shown to the operator as it is.
  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") headers["X-CSRF-Token"] = csrf();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      throw new Error("govgate did not answer. Check that it is running, then try again.");
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
    if (res.ok) return data;
    const msg = data && data.error && data.error.message;
    if (res.status === 401) throw new Error("Your session has ended. Reload the page to sign in again.");
    if (res.status === 404 && msg && msg.startsWith("no route for")) throw new Error("This govgate build does not offer that yet (" + method + " " + path + ").");
    throw new Error(msg || "The request failed with status " + res.status + ".");
  }

  function flash(kind, text) {
    const area = document.getElementById("flash");
    if (!area) return;
    area.replaceChildren(h("div", { class: "flash flash-" + kind, role: kind === "error" ? "alert" : "status" },
      h("span", { class: "flash-icon", "aria-hidden": "true" }, kind === "error" ? "✕" : "✓"),
      h("p", null, text),
      h("button", { type: "button", class: "flash-close", "aria-label": "Dismiss message" }, "×")));
  }

  document.addEventListener("click", (e) => {
    const close = e.target.closest(".flash-close");
    if (close) close.closest(".flash").remove();
  });

  // Destructive forms ask first.
  document.addEventListener("submit", (e) => {
    const msg = e.target.dataset && e.target.dataset.confirm;
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  // Filters apply as soon as a select changes.
  document.addEventListener("change", (e) => {
    if (e.target.matches("select[data-autosubmit]")) e.target.form.requestSubmit();
  });

  // ---- Live regions: re-fetch a server-rendered fragment every few seconds.
  function live(el) {
    const src = el.dataset.liveSrc;
    const every = Number(el.dataset.interval) || 5000;
    const status = document.querySelector(".live-status");
    let busy = false, stopped = false;
    const keyOf = (d, i) => {
      const owner = d.closest("[data-id],[data-dao]");
      return owner ? (owner.dataset.id || owner.dataset.dao) : "#" + i;
    };
    async function tick() {
      if (busy || stopped || document.hidden) return;
      busy = true;
      try {
        const res = await fetch(src, { credentials: "same-origin", headers: { Accept: "text/html" } });
        if (res.status === 401) {
          stopped = true;
          setStatus("Signed out. Reload the page to sign in again.", true);
          return;
        }
        if (!res.ok) throw new Error(String(res.status));
        const html = await res.text();
        const open = new Set([...el.querySelectorAll("details[open]")].map(keyOf));
        const known = new Set([...el.querySelectorAll("[data-id]")].map((n) => n.dataset.id));
        el.innerHTML = html; // our own server-rendered, escaped fragment
        el.querySelectorAll("details").forEach((d, i) => { if (open.has(keyOf(d, i))) d.open = true; });
        if (known.size > 0) {
          el.querySelectorAll("[data-id]").forEach((n) => { if (!known.has(n.dataset.id)) n.classList.add("is-new"); });
        }
        setStatus("Live · refreshes every " + Math.round(every / 1000) + " s", false);
      } catch (e) {
        setStatus("Connection lost · retrying", true);
      } finally {
        busy = false;
      }
    }
    function setStatus(text, stale) {
      if (!status) return;
      status.classList.toggle("is-stale", stale);
      status.lastChild.textContent = " " + text;
    }
    setInterval(tick, every);
    document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });
  }

  // ---- Chain editor: reorder, add, remove, configure, save with PUT.
  function chainEditor(root) {
    const endpoint = root.dataset.chainEndpoint;
    const list = root.querySelector(".chain-list");
    const empty = root.querySelector(".chain-empty");
    const status = root.querySelector(".chain-status");
    const tmpl = root.querySelector(".chain-entry-template");
    let plugins = [];
    try { plugins = JSON.parse(root.querySelector(".chain-plugins").textContent) || []; } catch (e) { plugins = []; }
    const byName = Object.fromEntries(plugins.map((p) => [p.name, p]));

    function say(text, kind) {
      status.textContent = text;
      status.className = "chain-status small" + (kind ? " is-" + kind : "");
    }
    function decorate(li) {
      const name = li.dataset.plugin;
      li.querySelector(".chain-name").textContent = name;
      li.querySelector(".chain-up").setAttribute("aria-label", "Move " + name + " up");
      li.querySelector(".chain-down").setAttribute("aria-label", "Move " + name + " down");
      li.querySelector(".chain-remove").setAttribute("aria-label", "Remove " + name + " from the chain");
      const area = li.querySelector(".chain-config");
      area.rows = Math.min(10, Math.max(2, area.value.split("\n").length));
      const p = byName[name];
      const schema = p && p.configSchema;
      const det = li.querySelector(".chain-schema");
      if (schema && Object.keys(schema).length > 0) {
        det.hidden = false;
        det.querySelector("pre").textContent = JSON.stringify(schema, null, 2);
      }
    }
    function refresh() {
      const items = [...list.children];
      empty.hidden = items.length > 0;
      items.forEach((li, i) => {
        li.querySelector(".chain-up").disabled = i === 0;
        li.querySelector(".chain-down").disabled = i === items.length - 1;
      });
    }
    [...list.children].forEach(decorate);
    refresh();

    root.addEventListener("input", () => say("Unsaved changes", ""));
    root.addEventListener("click", async (e) => {
      const b = e.target.closest("button");
      if (!b || !root.contains(b)) return;
      const li = b.closest(".chain-entry");
      if (b.classList.contains("chain-up") && li.previousElementSibling) {
        list.insertBefore(li, li.previousElementSibling);
      } else if (b.classList.contains("chain-down") && li.nextElementSibling) {
        list.insertBefore(li.nextElementSibling, li);
      } else if (b.classList.contains("chain-remove")) {
        const next = li.nextElementSibling || li.previousElementSibling;
        li.remove();
        (next ? next.querySelector(".chain-remove") : root.querySelector(".chain-add, .chain-save")).focus();
      } else if (b.classList.contains("chain-add")) {
        const name = root.querySelector(".chain-add-select").value;
        const node = tmpl.content.firstElementChild.cloneNode(true);
        node.dataset.plugin = name;
        list.append(node);
        decorate(node);
        node.querySelector(".chain-config").focus();
      } else if (b.classList.contains("chain-save")) {
        await save(b);
        return;
      } else {
        return;
      }
      if (!b.classList.contains("chain-remove") && !b.classList.contains("chain-add")) b.focus();
      refresh();
      say("Unsaved changes", "");
    });

    async function save(button) {
      const items = [];
      for (const li of list.children) {
        const area = li.querySelector(".chain-config");
        let config;
        try {
          config = JSON.parse(area.value.trim() || "{}");
          if (config === null || typeof config !== "object" || Array.isArray(config)) throw new Error("not an object");
          area.removeAttribute("aria-invalid");
        } catch (err) {
          area.setAttribute("aria-invalid", "true");
          area.focus();
          say("The configuration of " + li.dataset.plugin + " must be a JSON object, such as {}.", "error");
          return;
        }
        items.push({ plugin: li.dataset.plugin, config, failurePolicy: li.querySelector(".chain-policy").value });
      }
      button.disabled = true;
      say("Saving…", "");
      try {
        await api("PUT", endpoint, { items });
        say("Saved. New deliveries use this chain.", "ok");
      } catch (err) {
        say(err.message, "error");
      } finally {
        button.disabled = false;
      }
    }
  }

  // ---- Try it: run a chain on a notification and show what came out.
  function tryIt(form) {
    const area = document.getElementById("try-notification");
    const sampleSel = document.getElementById("try-sample");
    const chainSel = document.getElementById("try-chain");
    const out = document.getElementById("try-result");
    const run = document.getElementById("try-run");
    const configArea = document.getElementById("try-config");
    let samples = [];
    try { samples = JSON.parse(document.getElementById("try-samples").textContent) || []; } catch (e) { samples = []; }
    sampleSel.addEventListener("change", () => {
      const s = samples[Number(sampleSel.value)];
      if (s) area.value = JSON.stringify(s.notification, null, 2);
    });
    // parse reads a JSON field, or says what is wrong with it and returns undefined.
    function parse(field, what) {
      try {
        const v = JSON.parse(field.value);
        field.removeAttribute("aria-invalid");
        return v;
      } catch (err) {
        field.setAttribute("aria-invalid", "true");
        show(h("div", { class: "flash flash-error", role: "alert" }, h("span", { class: "flash-icon", "aria-hidden": "true" }, "✕"),
          h("p", null, what + " is not valid JSON: " + err.message)));
        field.focus();
        return undefined;
      }
    }
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const notification = parse(area, "The notification");
      if (notification === undefined) return;
      const body = { notification };
      if (chainSel.value) {
        const config = parse(configArea, "The config");
        if (config === undefined) return;
        body.chain = [{ plugin: chainSel.value, config, failurePolicy: "closed" }];
      }
      run.disabled = true;
      run.textContent = "Running…";
      try {
        show(result(await api("POST", "/admin/api/plugins/try", body)));
      } catch (err) {
        show(h("div", { class: "flash flash-error", role: "alert" }, h("span", { class: "flash-icon", "aria-hidden": "true" }, "✕"), h("p", null, err.message)));
      } finally {
        run.disabled = false;
        run.textContent = "Run the chain";
      }
    });
    function show(node) {
      out.hidden = false;
      out.replaceChildren(node);
    }
  }

  function pretty(body, type) {
    if (typeof body !== "string") return JSON.stringify(body, null, 2);
    if (!type || type.includes("json")) {
      try { return JSON.stringify(JSON.parse(body), null, 2); } catch (e) { /* as is */ }
    }
    return body;
  }

  function result(r) {
    r = r || {};
    const ms = (v) => (typeof v === "number" ? (v < 10 ? v.toFixed(2) : v.toFixed(0)) + " ms" : "—");
    const steps = Array.isArray(r.steps) ? r.steps : [];
    return h("div", { id: "try-output" },
      h("div", { class: "try-summary" },
        r.keep ? badge("kept", "Kept: it would be delivered") : badge("dropped", "Dropped: it would not be delivered"),
        h("span", { class: "muted" }, "in " + ms(r.durationMs)),
        r.contentType ? h("span", { class: "tag" }, r.contentType) : null),
      r.dropReason ? h("p", { class: "error-text" }, "Reason: " + r.dropReason) : null,
      r.keep ? h("div", null, h("p", { class: "strong small" }, "Body sent to receivers"), h("pre", { class: "code", id: "try-body" }, pretty(r.body, r.contentType))) : null,
      steps.length ? h("div", { class: "try-steps table-wrap" }, h("table", { class: "table table-compact" },
        h("caption", { class: "visually-hidden" }, "Plugin steps"),
        h("thead", null, h("tr", null, ["Plugin", "Hook", "Decision", "Time", "Logs"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", null, steps.map((s) => h("tr", null,
          h("td", { class: "mono strong" }, s.plugin || "—"),
          h("td", null, s.hook || "—"),
          h("td", null, badge(s.decision || "—"), s.error ? h("div", { class: "small error-text" }, s.error) : null),
          h("td", { class: "num" }, ms(s.durationMs)),
          h("td", null, (s.logs && s.logs.length) ? h("ol", { class: "try-logs" }, s.logs.map((l) => h("li", null, l))) : h("span", { class: "muted" }, "no logs"))))))) :
        h("p", { class: "muted" }, "No plugin ran: the chain is empty."));
  }

  document.querySelectorAll("[data-live-src]").forEach(live);
  document.querySelectorAll(".chain-editor").forEach(chainEditor);
  const tf = document.getElementById("try-form");
  if (tf) tryIt(tf);
  window.govgate = { api, flash };
})();
