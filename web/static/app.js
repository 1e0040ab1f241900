/* The what-if calculator: controls → a request (CONTRACT.md's JSON) → POST api/answer → the figures drawn.
   No build step; Telegram's telegram-web-app.js is the only script it loads besides this one. */
(function () {
  "use strict";
  var tg = (window.Telegram && window.Telegram.WebApp) || null;
  var TEXTS = {
    en: {model: "Model", training: "Training", posttrain: "Post-training", serving: "Serving", method: "Method",
      stage: "Stage", framework: "Framework", context: "Context", batch: "Batch", users: "Users at once",
      prompt: "Prompt, tokens", output: "Output, tokens", engine: "Engine", format: "Weights", gpu: "GPU",
      count: "GPUs", total: "Per GPU", plans: "Plans", changes: "What to change", copy: "Copy config",
      share: "Share", send: "Send to chat", any: "any", copied: "Copied", linkCopied: "Link copied",
      noAuth: "Open this calculator from the bot in Telegram.", wait: "Too many requests, retrying in a moment…",
      of: "of", full: "Full FT", lora: "LoRA", qlora: "QLoRA", sent: "Sent to the chat"},
    ru: {model: "Модель", training: "Обучение", posttrain: "Пост-обучение", serving: "Инференс", method: "Метод",
      stage: "Стадия", framework: "Фреймворк", context: "Контекст", batch: "Батч", users: "Пользователей сразу",
      prompt: "Промпт, токенов", output: "Ответ, токенов", engine: "Движок", format: "Веса", gpu: "GPU",
      count: "Число GPU", total: "На одну GPU", plans: "Варианты", changes: "Что можно изменить",
      copy: "Скопировать конфиг", share: "Поделиться", send: "Отправить в чат", any: "любой", copied: "Скопировано",
      linkCopied: "Ссылка скопирована", noAuth: "Откройте калькулятор из бота в Telegram.",
      wait: "Слишком много запросов, повторю через мгновение…", of: "из", full: "Full FT", lora: "LoRA",
      qlora: "QLoRA", sent: "Отправлено в чат"}
  };
  var CONTEXTS = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072];
  var COUNTS = [1, 2, 4, 8, 16, 32];
  var COLORS = {weights: "#4e79a7", adapters: "#59a14f", gradients: "#edc948", optimizer: "#f28e2b",
    activations: "#e15759", logits: "#b07aa1", kv_cache: "#76b7b2", overhead: "#9c755f", shape_margin: "#bab0ac",
    cuda_context: "#7f7f7f", gathered: "#86bcb6",
    autocast: "#a0cbe8", step_buffers: "#d4a6c8"};
  var EXTRAS = ["gradient_checkpointing", "optimizer", "fused_loss", "offload", "bits", "sharding", "kv_cache_dtype"];
  var user = (tg && tg.initDataUnsafe && tg.initDataUnsafe.user) || {};
  var lang = String(user.language_code || navigator.language || "en").slice(0, 2) === "ru" ? "ru" : "en";
  var T = TEXTS[lang];
  var $ = function (id) { return document.getElementById(id); };
  var initData = (tg && tg.initData) || "";
  var catalog = null, last = null, timer = null, seq = 0;
  var state = {kind: "training", extras: {}};

  function applyTheme() {
    var p = (tg && tg.themeParams) || {}, root = document.documentElement;
    Object.keys(p).forEach(function (k) { root.style.setProperty("--tg-theme-" + k.replace(/_/g, "-"), p[k]); });
    root.setAttribute("data-theme", (tg && tg.colorScheme) === "dark" ? "dark" : "light");
  }

  function translate() {
    document.documentElement.lang = lang;
    Array.prototype.forEach.call(document.querySelectorAll("[data-t]"), function (el) {
      var key = el.getAttribute("data-t"); if (T[key]) { el.textContent = T[key]; }
    });
  }

  function options(select, items, label) {
    select.innerHTML = "";
    items.forEach(function (v) {
      var o = document.createElement("option"); o.value = v; o.textContent = label ? label(v) : v;
      select.appendChild(o);
    });
  }

  function fillControls(c) {
    var list = $("models");
    c.models.forEach(function (m) {
      var o = document.createElement("option"); o.value = m.name; o.label = m.hf_id; list.appendChild(o);
    });
    options($("method"), c.methods, function (m) { return T[m] || m; });
    options($("stage"), c.stages);
    options($("framework"), [""].concat(c.frameworks), function (f) { return f || T.any; });
    options($("engine"), c.engines);
    options($("format"), c.formats);
    options($("gpu"), c.gpus.map(function (g) { return g.name; }));
    options($("count"), COUNTS);
    $("gpu").value = "RTX 4090";
    $("model").value = "Llama-3.1-8B";
    $("method").value = "lora";
    targets();
  }

  function targets() {
    if (!catalog) { return; }
    var kind = state.kind === "serving" ? "serving" : "training";
    options($("target"), catalog.config_targets[kind], function (t) { return catalog.config_labels[t] || t; });
  }

  function num(id) { var v = parseInt($(id).value, 10); return isFinite(v) && v > 0 ? v : null; }

  function buildRequest() {
    var model = $("model").value.trim();
    var r = {model: {name: model || null}, gpus: [{name: $("gpu").value, count: parseInt($("count").value, 10) || 1}]};
    if (state.kind === "serving") {
      r.method = "inference";
      r.serving_engine = $("engine").value;
      r.quantization = $("format").value;
      r.concurrency = num("users");
      r.prompt_len = num("prompt");
      r.output_len = num("output");
    } else {
      r.method = $("method").value;
      r.seq_len = CONTEXTS[parseInt($("ctx").value, 10)];
      r.batch_size = num("batch");
      if ($("framework").value) { r.framework = $("framework").value; }
      if (state.kind === "posttrain") { r.stage = $("stage").value; }
    }
    EXTRAS.forEach(function (k) { if (state.extras[k] !== undefined && state.extras[k] !== null) { r[k] = state.extras[k]; } });
    return r;
  }

  function fromRequest(r) {
    if (!r) { return; }
    if (r.model && r.model.name) { $("model").value = r.model.name; }
    var g = (r.gpus || [])[0];
    if (g && g.name) { $("gpu").value = g.name; }
    if (g && g.count) { setCount(g.count); }
    var serving = r.method === "inference" || r.concurrency || r.serving_engine;
    setKind(serving ? "serving" : (r.stage && r.stage !== "sft" ? "posttrain" : "training"));
    if (r.method && r.method !== "inference") { $("method").value = r.method; }
    if (r.stage) { $("stage").value = r.stage; }
    if (r.framework) { $("framework").value = r.framework; }
    if (r.seq_len) { setContext(r.seq_len); }
    if (r.batch_size) { $("batch").value = r.batch_size; }
    if (r.serving_engine) { $("engine").value = r.serving_engine; }
    if (r.quantization) { $("format").value = r.quantization; }
    if (r.concurrency) { $("users").value = r.concurrency; }
    if (r.prompt_len) { $("prompt").value = r.prompt_len; }
    if (r.output_len) { $("output").value = r.output_len; }
    state.extras = {};
    EXTRAS.forEach(function (k) { if (r[k] !== undefined && r[k] !== null) { state.extras[k] = r[k]; } });
  }

  function setContext(n) {
    var best = 0;
    CONTEXTS.forEach(function (c, i) { if (Math.abs(Math.log(c / n)) < Math.abs(Math.log(CONTEXTS[best] / n))) { best = i; } });
    $("ctx").value = best; showContext();
  }
  function showContext() { var c = CONTEXTS[parseInt($("ctx").value, 10)]; $("ctx-value").textContent = c >= 1024 ? c / 1024 + "k" : String(c); }
  function setCount(n) {
    if (COUNTS.indexOf(n) < 0) { var o = document.createElement("option"); o.value = n; o.textContent = n; $("count").appendChild(o); }
    $("count").value = String(n);
  }
  function setKind(kind) {
    state.kind = kind;
    $("app").setAttribute("data-kind-now", kind);
    Array.prototype.forEach.call(document.querySelectorAll("#kind button"), function (b) {
      b.setAttribute("aria-selected", b.getAttribute("data-kind") === kind ? "true" : "false");
    });
    targets();
  }

  function post(path, body) {
    return fetch(path, {method: "POST", headers: {"Content-Type": "application/json", "X-Telegram-Init-Data": initData},
      body: JSON.stringify(body)}).then(function (resp) {
      return resp.json().then(function (data) { return {status: resp.status, data: data}; });
    });
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = setTimeout(update, delay === undefined ? 300 : delay);
  }

  function update(body) {
    var mine = ++seq;
    var payload = body || {request: buildRequest(), lang: lang};
    document.body.classList.add("busy");
    return post("api/answer", payload).then(function (res) {
      if (mine !== seq) { return; }
      document.body.classList.remove("busy");
      if (res.status === 429) { showError(T.wait); schedule((res.data.retry_after || 1) * 1000); return; }
      if (res.status === 401) { showError(T.noAuth + " (" + res.data.error + ")"); return; }
      if (res.status !== 200 || res.data.error) { showError(res.data.error || ("HTTP " + res.status)); return; }
      if (body) { fromRequest(res.data.request); }
      draw(res.data);
    }).catch(function (e) { document.body.classList.remove("busy"); showError(String(e)); });
  }

  function showError(text) { var el = $("error"); el.textContent = text; el.hidden = false; }

  function li(text) { var el = document.createElement("li"); el.textContent = text; return el; }

  function draw(data) {
    last = data;
    var v = data.view;
    $("error").hidden = true;
    $("verdict").textContent = v.headline;
    $("verdict").setAttribute("data-verdict", v.verdict || "");
    $("summary").textContent = v.summary || "";
    // the components peak at different moments (the chat's table too): the bar is their shares of the peak
    var bar = v.bar, scale = Math.max(bar.total, bar.capacity, 1) * 1.02;
    var sum = bar.segments.reduce(function (a, s) { return a + s.gib; }, 0) || 1;
    var seg = $("segments"); seg.innerHTML = "";
    var legend = $("legend"); legend.innerHTML = "";
    bar.segments.forEach(function (s) {
      var d = document.createElement("div");
      d.style.width = (100 * (s.gib / sum) * bar.total / scale) + "%"; d.style.background = COLORS[s.key] || "#888";
      d.title = s.label + ": " + s.gib; d.setAttribute("data-key", s.key); seg.appendChild(d);
      var item = li(s.label + " " + fmt(s.gib)); var i = document.createElement("i"); i.style.background = d.style.background;
      item.insertBefore(i, item.firstChild); legend.appendChild(item);
    });
    $("cap").style.left = (100 * bar.capacity / scale) + "%";
    $("cap").hidden = !bar.capacity;
    $("total").textContent = fmt(bar.total) + (bar.capacity ? " " + T.of + " " + fmt(bar.capacity) : "") + " GB";
    $("bar").setAttribute("aria-label", $("total").textContent);
    var figs = $("figures"); figs.innerHTML = "";
    (v.figures || []).forEach(function (f) { figs.appendChild(li(f)); });
    var plans = $("plans"); plans.innerHTML = "";
    (v.plans || []).forEach(function (p) {
      plans.appendChild(li(p.count + "×" + p.gpu + (p.techniques ? " + " + p.techniques : "") + ": " + (p.figures || [p.time, p.money].join(", "))));
    });
    $("plans-title").hidden = !(v.plans || []).length;
    var chips = $("changes"); chips.innerHTML = "";
    (v.changes || []).forEach(function (c) {
      var b = document.createElement("button"); b.type = "button"; b.textContent = c.label;
      if (c.patch) { b.addEventListener("click", function () { applyPatch(c.patch); }); } else { b.disabled = true; }
      chips.appendChild(b);
    });
    $("changes-title").hidden = !(v.changes || []).length;
    if (tg && tg.MainButton) { tg.MainButton.setText(T.send); tg.MainButton.show(); }
  }

  function fmt(x) { return Number(x).toLocaleString(lang === "ru" ? "ru-RU" : "en-US", {maximumFractionDigits: 1}); }

  function applyPatch(p) {
    Object.keys(p).forEach(function (k) {
      var val = p[k];
      if (k === "seq_len") { setContext(val); }
      else if (k === "batch_size") { $("batch").value = val; }
      else if (k === "method") { if (val) { $("method").value = val; } }
      else if (k === "gpu_count") { setCount(val); }
      else if (k === "gpu") { $("gpu").value = val; }
      else if (k === "concurrency") { $("users").value = val; }
      else if (k === "quantization") { if (val) { $("format").value = val; } }
      else { state.extras[k] = val; }
    });
    schedule(0);
  }

  function copy(text, done) {
    var ok = function () { $("notice").textContent = done; };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(ok, ok);
    } else { ok(); }
  }

  function copyConfig() {
    post("api/config", {request: buildRequest(), framework: $("target").value}).then(function (res) {
      var pre = $("config");
      if (res.status !== 200) { pre.textContent = res.data.error || ("HTTP " + res.status); pre.hidden = false; return; }
      var text = res.data.files.map(function (f) { return "==> " + f.name + " <==\n" + f.text; }).join("\n") +
        "\n$ " + res.data.command;
      pre.textContent = text; pre.hidden = false; copy(text, T.copied);
    });
  }

  function share() {
    post("api/share", {request: buildRequest()}).then(function (res) {
      if (res.status !== 200) { showError(res.data.error || ("HTTP " + res.status)); return; }
      var link = res.data.link || (location.origin + location.pathname + "?q=" + res.data.qid);
      $("notice").textContent = link; copy(link, T.linkCopied + ": " + link);
    });
  }

  function sendToChat() {
    if (!last) { return; }
    var qid = tg.initDataUnsafe && tg.initDataUnsafe.query_id;
    if (qid) {  // opened from an inline button or a link: the bot answers the Web App query with the answer
      post("api/send", {request: buildRequest(), lang: lang}).then(function (res) {
        if (res.status === 200) { $("notice").textContent = T.sent; if (tg.close) { tg.close(); } }
        else { showError(res.data.error || ("HTTP " + res.status)); }
      });
    } else if (tg.sendData) {  // opened from a reply-keyboard button: the bot gets web_app_data
      tg.sendData(JSON.stringify({request: buildRequest(), lang: lang}).slice(0, 4096));
    }
  }

  function start() {
    applyTheme(); translate();
    if (tg) {
      if (tg.ready) { tg.ready(); }
      if (tg.expand) { tg.expand(); }
      if (tg.onEvent) { tg.onEvent("themeChanged", applyTheme); }
      if (tg.MainButton && tg.MainButton.onClick) { tg.MainButton.onClick(sendToChat); }
    }
    var qs = new URLSearchParams(location.search);
    var qid = (tg && tg.initDataUnsafe && tg.initDataUnsafe.start_param) || qs.get("q");
    fetch("api/catalog").then(function (r) { return r.json(); }).then(function (c) {
      catalog = c; fillControls(c); setKind("training"); setContext(8192); showContext();
      ["model", "method", "stage", "framework", "batch", "users", "prompt", "output", "engine", "format", "gpu", "count"]
        .forEach(function (id) { $(id).addEventListener(id === "model" || $(id).type === "number" ? "input" : "change", function () { schedule(); }); });
      $("ctx").addEventListener("input", function () { showContext(); schedule(); });
      $("method").addEventListener("change", function () { delete state.extras.bits; delete state.extras.optimizer; });
      Array.prototype.forEach.call(document.querySelectorAll("#kind button"), function (b) {
        b.addEventListener("click", function () { setKind(b.getAttribute("data-kind")); schedule(0); });
      });
      $("copy-config").addEventListener("click", copyConfig);
      $("share").addEventListener("click", share);
      devInitData(qid).then(function () {
        if (!initData) { showError(T.noAuth); return; }
        if (qid && /^[A-Za-z0-9_-]{1,64}$/.test(qid)) { update({qid: qid, lang: lang}); } else { schedule(0); }
      });
    });
  }

  function devInitData(qid) {  // outside Telegram, `gpu-advisor web --dev-token` signs a test initData
    if (initData) { return Promise.resolve(); }
    return fetch("api/dev-init-data?lang=" + lang + (qid ? "&q=" + encodeURIComponent(qid) : "")).then(function (r) {
      return r.ok ? r.json().then(function (d) { initData = d.initData; }) : null;
    }).catch(function () { return null; });
  }

  start();
})();
