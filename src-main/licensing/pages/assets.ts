/** The pages' one stylesheet and one script, served from /buy/assets/ so the CSP needs no inline code. */
export const PAGES_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #f7f7f8; --card: #fff; --muted: #5b6470; --accent: #f7931a; --border: #d8dce1; --bad: #b42318; }
@media (prefers-color-scheme: dark) { :root { --fg: #e7e9ec; --bg: #111418; --card: #1a1f25; --muted: #9aa4af; --border: #2c333b; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 760px; margin: 0 auto; padding: 32px 20px 64px; }
h1 { font-size: 1.8rem; margin: 0 0 8px; }
p.lead { color: var(--muted); margin-top: 0; }
fieldset { border: 0; padding: 0; margin: 0; min-width: 0; }
.tiers { display: grid; gap: 12px; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); margin: 24px 0; }
.tier { display: block; background: var(--card); border: 1px solid var(--border); border-radius: 10px; padding: 16px; cursor: pointer; }
.tier:has(input:checked) { border-color: var(--accent); box-shadow: 0 0 0 2px var(--accent) inset; }
.tier input { margin-right: 6px; }
.tier .price { font-size: 1.3rem; font-weight: 600; margin: 6px 0; }
.tier .badge { background: var(--accent); color: #111; border-radius: 999px; padding: 1px 8px; font-size: .75rem; margin-left: 6px; }
.tier ul { margin: 8px 0 0; padding-left: 18px; color: var(--muted); font-size: .9rem; }
label.field { display: block; margin: 12px 0 4px; font-weight: 500; }
input[type=text], input[type=email], textarea { width: 100%; padding: 10px; border: 1px solid var(--border); border-radius: 8px; background: var(--card); color: var(--fg); font: inherit; }
textarea { min-height: 96px; font-family: ui-monospace, monospace; }
button, a.button { display: inline-block; margin-top: 16px; padding: 10px 18px; border: 0; border-radius: 8px; background: var(--accent); color: #111; font: inherit; font-weight: 600; cursor: pointer; text-decoration: none; }
button:focus-visible, a:focus-visible, input:focus-visible, textarea:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
.error { color: var(--bad); border: 1px solid var(--bad); border-radius: 8px; padding: 10px 12px; }
.card { background: var(--card); border: 1px solid var(--border); border-radius: 10px; padding: 16px; margin: 16px 0; }
.key { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; background: var(--bg); border: 1px solid var(--border); border-radius: 8px; padding: 12px; }
.muted { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
dt { color: var(--muted); }
dd { margin: 0; }
[hidden] { display: none !important; }
.about { color: var(--muted); font-size: .9rem; }
.code-row { display: flex; gap: 8px; align-items: stretch; }
.code-row input { flex: 1; min-width: 0; }
.code-row button { margin-top: 0; }
button.secondary { background: transparent; color: var(--fg); border: 1px solid var(--border); }
.preview s { color: var(--muted); margin-left: 6px; }
`

/**
 * Thank-you page: while the invoice is pending or its license is being issued, poll
 * `GET /v1/purchase/:id` politely (a growing interval, paused while the tab is hidden, for at most
 * about two hours) and reload once the state moves on, so the server words every state. A copy
 * button on any element with `data-copy`. Nothing is written into the page as markup.
 */
export const PAGES_JS = `
(function () {
  'use strict';
  function copyButtons() {
    document.querySelectorAll('[data-copy]').forEach(function (btn) {
      if (btn.hasAttribute('data-bound')) return;
      btn.setAttribute('data-bound', '');
      btn.addEventListener('click', function () {
        var el = document.getElementById(btn.getAttribute('data-copy'));
        if (!el) return;
        var text = el.textContent || '';
        var done = function () { btn.textContent = 'Copied'; setTimeout(function () { btn.textContent = 'Copy key'; }, 2000); };
        if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, function () {});
      });
    });
  }
  function poll() {
    var box = document.getElementById('purchase');
    if (!box) return;
    var id = box.getAttribute('data-invoice');
    var state = box.getAttribute('data-state');
    if (!id || (state !== 'waiting' && state !== 'issuing')) return;
    var status = box.getAttribute('data-status');
    var hasLicense = box.getAttribute('data-license') === '1';
    var delay = 3000;
    var tries = 0;
    var waitingForTab = false;
    var schedule = function () {
      if (tries >= 400) return;
      delay = Math.min(Math.round(delay * 1.25), 20000);
      setTimeout(tick, delay);
    };
    var tick = function () {
      if (document.hidden) { waitingForTab = true; return; }
      tries++;
      fetch('/v1/purchase/' + encodeURIComponent(id), { headers: { accept: 'application/json' } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (p) {
          if (p && (p.status !== status || Boolean(p.license_id) !== hasLicense)) { location.reload(); return; }
          schedule();
        }, schedule);
    };
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && waitingForTab) { waitingForTab = false; delay = 3000; tick(); }
    });
    setTimeout(tick, delay);
  }
  document.addEventListener('DOMContentLoaded', function () { copyButtons(); poll(); });
})();
`

/** The pages' icon (also answered at /favicon.ico, which browsers ask for by themselves). */
export const PAGES_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" role="img" aria-label="Tandem">
  <rect width="64" height="64" rx="14" fill="#1b1f24"/>
  <circle cx="24" cy="32" r="13" fill="none" stroke="#5b8df7" stroke-width="5"/>
  <circle cx="40" cy="32" r="13" fill="none" stroke="#3cc27a" stroke-width="5"/>
</svg>
`
