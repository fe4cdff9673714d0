// harness-ros console: the page's only script (served as a file: the CSP allows no inline script).
// Everything the node sent is hostile text: it reaches the DOM through textContent only.
"use strict";

(function () {
  const KEY = "harness-console-token";
  const state = { token: null, currentTask: null, approvals: new Map(), questions: new Map(),
                  views: new Map(), seenTasks: new Map() };
  // For the browser test and anyone curious: when each decision reached the screen.
  const probe = window.harnessConsole = { shown: [], viewsLoaded: [], updates: 0 };

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function $(id) { return document.getElementById(id); }
  function json(value) {
    try { return JSON.stringify(value, null, 1); } catch (e) { return String(value); }
  }
  function short(text, limit) {
    const s = typeof text === "string" ? text : json(text);
    return s.length > limit ? s.slice(0, limit - 1) + "\u2026" : s;
  }
  function feedback(text) { $("feedback").textContent = text; }

  function headers(extra) {
    return Object.assign({ "Authorization": "Bearer " + state.token }, extra || {});
  }
  async function post(path, body) {
    const reply = await fetch(path, { method: "POST", headers: headers({ "Content-Type": "application/json" }),
                                      body: JSON.stringify(body), cache: "no-store" });
    let answer = {};
    try { answer = await reply.json(); } catch (e) { answer = {}; }
    if (!reply.ok) { feedback("refused: " + (answer.error || reply.status)); return null; }
    feedback("");
    return answer;
  }

  // ------------------------------------------------------------ rendering
  function describe(event) {
    const d = (event && typeof event.data === "object" && event.data) || {};
    switch (event.type) {
      case "task_started": return "started: " + short(d.instruction, 500);
      case "model_response": {
        const calls = Array.isArray(d.tool_calls) ? d.tool_calls : (Array.isArray(d.calls) ? d.calls : []);
        const parts = [];
        if (d.text) parts.push(short(d.text, 1500));
        for (const c of calls) parts.push("call " + short(c && c.name, 80) + " " + short(c && c.arguments, 400));
        return parts.join("\n") || short(d, 600);
      }
      case "tool_call": return short(d.tool, 80) + " " + short(d.arguments, 600);
      case "tool_result": return short(d.tool, 80) + ": " + short(d.result, 800);
      case "safety": return short(d, 600);
      case "verdict": return short(d.verdict !== undefined ? d.verdict : d, 600);
      case "memory_consolidation": return short(d, 800);
      case "done": return "status " + short(d.status, 40) + ", outcome " + short(d.outcome, 40) +
        (d.reason ? ": " + short(d.reason, 400) : "") + (d.report ? "\nreport: " + short(d.report, 300) : "");
      default: return short(d, 500);
    }
  }

  function addEvent(update) {
    const event = update.event || {};
    const li = el("li");
    li.dataset.type = String(event.type || "");
    li.appendChild(el("span", event.type, "etype"));
    if (event.turn !== null && event.turn !== undefined) li.appendChild(el("span", "turn " + event.turn + " ", "turn"));
    li.appendChild(el("span", describe(event), "etext"));
    const list = $("events");
    list.appendChild(li);
    while (list.children.length > 400) list.removeChild(list.firstChild);
    list.scrollTop = list.scrollHeight;
    if (event.type === "model_response") {
      probe.shown.push({ task_id: event.task_id, turn: event.turn, published: event.time, shown: Date.now() / 1000 });
    }
  }

  function renderTask(task) {
    state.seenTasks.set(task.task_id, task);
    const list = $("history");
    list.textContent = "";
    const tasks = Array.from(state.seenTasks.values()).reverse().slice(0, 20);
    for (const t of tasks) {
      const li = el("li", t.task_id + "  " + (t.state === "done" ? (t.status + " / " + t.outcome) : t.state) +
                    "  " + short(t.instruction || "", 160));
      if (t.report) li.appendChild(el("div", "report: " + short(t.report, 300), "report"));
      list.appendChild(li);
    }
  }

  function setCurrent(taskId) {
    state.currentTask = taskId || null;
    $("task-id").textContent = taskId ? "task " + taskId : "no task";
    $("task-state").textContent = taskId ? "running" : "";
    $("cancel").disabled = !taskId;
  }

  function renderApprovals() {
    const box = $("approvals");
    box.textContent = "";
    for (const a of state.approvals.values()) {
      if (a.status !== "pending") continue;
      const card = el("div", null, "card approval");
      card.dataset.requestId = String(a.request_id);
      card.appendChild(el("div", "Approve tool " + short(a.tool, 80) + "? (request " + a.request_id + ")"));
      card.appendChild(el("pre", json(a.arguments)));
      const yes = el("button", "Approve", "approve"); yes.type = "button";
      const no = el("button", "Deny", "deny"); no.type = "button";
      const decide = (approved) => post("/api/approval",
        { request_id: a.request_id, hash: a.hash, approved: approved });
      yes.addEventListener("click", () => decide(true));
      no.addEventListener("click", () => decide(false));
      card.appendChild(yes); card.appendChild(no);
      box.appendChild(card);
    }
  }

  function renderQuestions() {
    const box = $("questions");
    box.textContent = "";
    for (const q of state.questions.values()) {
      if (q.status !== "pending") continue;
      const card = el("div", null, "card question");
      card.dataset.questionId = String(q.question_id);
      card.appendChild(el("div", "Question: " + short(q.question, 1000)));
      const send = (text) => post("/api/answer", { question_id: q.question_id, text: text });
      for (const choice of (Array.isArray(q.choices) ? q.choices : [])) {
        const b = el("button", short(choice, 80)); b.type = "button";
        b.addEventListener("click", () => send(String(choice)));
        card.appendChild(b);
      }
      const form = el("form"); const input = el("input"); input.maxLength = 2000;
      form.appendChild(input); const b = el("button", "Answer"); b.type = "submit"; form.appendChild(b);
      form.addEventListener("submit", (e) => { e.preventDefault(); if (input.value.trim()) send(input.value); });
      card.appendChild(form);
      box.appendChild(card);
    }
  }

  async function showView(meta) {
    const name = String(meta.name);
    let entry = state.views.get(name);
    if (!entry) {
      const fig = el("figure"); const img = el("img"); img.alt = name; const cap = el("figcaption");
      fig.dataset.view = name; fig.appendChild(img); fig.appendChild(cap); $("views").appendChild(fig);
      entry = { fig: fig, img: img, cap: cap, meta: meta, url: null };
      state.views.set(name, entry);
    }
    entry.meta = meta;
    const reply = await fetch("/api/view/" + encodeURIComponent(name), { headers: headers(), cache: "no-store" });
    if (!reply.ok) return;
    const blob = await reply.blob();
    if (entry.meta.version !== meta.version) return; // a newer one is on its way
    const url = URL.createObjectURL(blob);
    entry.img.onload = () => {
      entry.img.dataset.version = String(meta.version);
      probe.viewsLoaded.push({ name: name, version: meta.version, stamp: meta.stamp, shown: Date.now() / 1000 });
    };
    entry.img.src = url;
    if (entry.url) URL.revokeObjectURL(entry.url);
    entry.url = url;
  }

  function refreshAges() {
    const now = Date.now() / 1000;
    for (const [name, entry] of state.views) {
      const age = Math.max(0, now - Number(entry.meta.received || now));
      entry.cap.textContent = name + " \u2014 " + age.toFixed(1) + " s ago (" + entry.meta.bytes + " B)";
    }
  }

  function apply(update) {
    probe.updates += 1;
    switch (update.kind) {
      case "snapshot":
        $("node").textContent = String(update.node || "");
        setConnected(update.connected);
        $("events").textContent = "";
        for (const e of update.events || []) addEvent(e);
        state.seenTasks.clear();
        for (const t of (update.tasks || []).slice().reverse()) renderTask(t);
        setCurrent(update.current_task);
        state.approvals.clear();
        for (const a of update.approvals || []) state.approvals.set(a.request_id, a);
        renderApprovals();
        state.questions.clear();
        for (const q of update.questions || []) state.questions.set(q.question_id, q);
        renderQuestions();
        for (const n of update.notices || []) addNotice(n);
        for (const v of update.views || []) showView(v);
        for (const w of update.warnings || []) addWarning(w);
        break;
      case "event": addEvent(update); break;
      case "task": renderTask(update.task); setCurrent(update.current_task); break;
      case "approval": state.approvals.set(update.approval.request_id, update.approval); renderApprovals(); break;
      case "question": state.questions.set(update.question.question_id, update.question); renderQuestions(); break;
      case "notice": addNotice(update.notice); break;
      case "view": showView(update.view); break;
      case "connection": setConnected(update.connected); break;
      case "warning": addWarning(update.text); break;
      default: break;
    }
  }
  function addNotice(n) { $("notices").appendChild(el("li", (n.level || "info") + ": " + short(n.text, 600))); }
  function addWarning(text) { $("warnings").appendChild(el("div", "console: " + short(text, 600), "bad")); }
  function setConnected(ok) {
    $("connection").textContent = ok ? "connected" : "node not seen";
    $("connection").className = ok ? "good" : "bad";
  }

  // ------------------------------------------------------------ the stream (fetch: it sends the header)
  async function follow() {
    for (;;) {
      try {
        const reply = await fetch("/api/stream", { headers: headers(), cache: "no-store" });
        if (reply.status === 401) {
          sessionStorage.removeItem(KEY); following = false; showLogin("the token was refused"); return;
        }
        const reader = reply.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
            const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
            if (data) apply(JSON.parse(data));
          }
        }
      } catch (e) { /* the console went away: try again */ }
      setConnected(false);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  function showLogin(reason) {
    $("main").hidden = true; $("login").hidden = false;
    if (reason) feedback(reason);
  }

  let following = false;
  function start() {
    $("main").hidden = false; $("login").hidden = true;
    if (!following) { following = true; follow(); }
  }

  function takeTokenFromFragment() {
    // The token comes in the URL's fragment (never sent to a server), like a notebook
    // server's link; it is kept for this tab only and taken out of the address bar.
    const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (!match) return false;
    sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname);
    state.token = sessionStorage.getItem(KEY);
    return true;
  }

  document.addEventListener("DOMContentLoaded", () => {
    takeTokenFromFragment();
    state.token = sessionStorage.getItem(KEY);
    window.addEventListener("hashchange", () => { if (takeTokenFromFragment()) start(); });
    $("login-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const value = $("token-input").value.trim();
      if (value) { sessionStorage.setItem(KEY, value); state.token = value; start(); }
    });
    $("instruction-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = $("instruction").value.trim();
      if (!text) return;
      const done = state.currentTask
        ? await post("/api/revise", { task_id: state.currentTask, text: text })
        : await post("/api/instruction", { text: text });
      if (done) $("instruction").value = "";
    });
    $("cancel").addEventListener("click", () => {
      if (state.currentTask) post("/api/cancel", { task_id: state.currentTask });
    });
    setInterval(refreshAges, 500);
    if (state.token) start(); else showLogin("");
  });
})();
