/* A local stand-in for telegram.org's telegram-web-app.js in the browser tests: the fields and calls the page
   uses, filled from window.__TG__ (set by the test before the page loads). */
(function () {
  var cfg = window.__TG__ || {};
  window.__sent = [];
  window.Telegram = {WebApp: {
    initData: cfg.initData || "",
    initDataUnsafe: {user: cfg.user || {}, start_param: cfg.start_param, query_id: cfg.query_id},
    themeParams: cfg.themeParams || {},
    colorScheme: cfg.colorScheme || "light",
    ready: function () {}, expand: function () {}, onEvent: function () {}, close: function () {},
    sendData: function (d) { window.__sent.push(d); },
    MainButton: {text: "", visible: false, handlers: [],
      setText: function (t) { this.text = t; }, show: function () { this.visible = true; },
      hide: function () { this.visible = false; }, onClick: function (f) { this.handlers.push(f); }}
  }};
})();
