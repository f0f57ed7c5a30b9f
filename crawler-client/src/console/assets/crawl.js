// The crawl console: overview, hosts, one host, freshness, the actions log.
"use strict";

(() => {
  const { el, api, stream, fmt, chart, rate, table, route, say, card } = wc;
  const $ = (id) => document.getElementById(id);
  let samples = [], fresh = [], overview = {}, live = false;
  const hostState = { sort: "fetched" }, visitState = { sort: "fetched_at" }, dueState = { sort: "due", asc: true };
  const actState = { sort: "at" };

  function drawOverview() {
    const o = overview;
    const st = $("state");
    st.textContent = o.state || "–";
    st.className = "state " + (o.state || "").replace(/\s.*/, "");
    $("out").textContent = o.out || "";
    const pages = rate(samples, "fetched");
    const lastRate = pages.length ? pages[pages.length - 1][1] : null;
    const e = o.errors || {};
    const errors = (e["4xx"] || 0) + (e["5xx"] || 0) + (e.failed || 0);
    $("cards").replaceChildren(
      card("pages fetched (all runs)", fmt.num(o.pages_total), "card-fetched"),
      card("this run", fmt.num(o.fetched), "card-run"),
      card("pages/s", fmt.num(lastRate), "card-rate"),
      card("queue", fmt.num(o.queued), "card-queued"),
      card("hosts active / known", fmt.num(o.hosts_active) + " / " + fmt.num(o.hosts), "card-hosts"),
      card("in flight", fmt.num(o.in_flight), "card-inflight"),
      card("errors", fmt.num(errors), "card-errors"),
      card("received", fmt.bytes(o.bytes), "card-bytes"),
      card("WARC written", fmt.bytes(o.warc_bytes), "card-warc"),
      card("disk free", fmt.bytes(o.disk_free), "card-disk"),
      card("ETA", o.eta_secs ? fmt.secs(o.eta_secs) : "–", "card-eta"),
    );
    if (o.signed) $("cards").append(card("requests signed", fmt.num(o.signed), "card-signed"));
    chart($("chart-pages"), [{ name: "pages/s", points: pages }]);
    chart($("chart-bytes"), [{ name: "bytes/s", points: rate(samples, "bytes") }], { format: fmt.bytes });
    chart($("chart-queue"), [
      { name: "queue", points: samples.map((s) => [s.t, s.queued]) },
      { name: "in flight", points: samples.map((s) => [s.t, s.in_flight]) },
    ]);
    const errs = Object.entries(o.errors || {}).map(([kind, n]) => ({ kind, n }));
    table($("errors"), [{ key: "kind", label: "kind" }, { key: "n", label: "count", num: true }], errs, { sort: "n" });
    const refused = (o.refusals || []).map((why, i) => ({ n: i + 1, why }));
    $("refusals-panel").hidden = refused.length === 0;
    table($("refusals"), [{ key: "n", label: "#", num: true }, { key: "why", label: "destination and why", wrap: true }], refused, { sort: "n" });
    $("pause").disabled = !live || o.paused;
    $("resume").disabled = !live || !o.paused;
  }

  async function loadOverview() {
    const d = await api("/api/overview");
    overview = d.overview; samples = d.samples || []; live = d.live;
    if (!live) $("add-seed").textContent = "Add seed (next start)";
    drawOverview();
  }

  // The server sorts and pages the hosts: a crawl may know 100,000 of them.
  hostState.pageSize = 100;
  hostState.reload = () => loadHosts().catch((e) => say($("msg"), e.message, true));
  async function loadHosts() {
    const q = new URLSearchParams({ sort: hostState.sort, dir: hostState.asc ? "asc" : "desc", q: hostState.filter || "", offset: hostState.offset || 0, limit: hostState.pageSize });
    const d = await api("/api/hosts?" + q);
    hostState.total = d.total;
    hostState.sort = d.sort;
    hostState.asc = d.dir === "asc";
    table($("hosts-table"), [
      { key: "origin", label: "host", link: (r) => "#host/" + r.id, wrap: true },
      { key: "state", label: "state" },
      { key: "queued", label: "queued", num: true },
      { key: "fetched", label: "fetched", num: true },
      { key: "errors", label: "errors", num: true },
      { key: "in_flight", label: "in flight", num: true },
      { key: "delay_secs", label: "delay", num: true, fmt: (v) => v === undefined ? "–" : fmt.secs(v) },
      { key: "delay_why", label: "why" },
      { key: "robots", label: "robots.txt" },
      { key: "coop", label: "cooperation" },
      { key: "trust", label: "trust", num: true, fmt: (v) => v === null || v === undefined ? "–" : v.toFixed(2) },
      { key: "saved", label: "requests saved", num: true },
    ], d.hosts, hostState, (r) => r.state === "blocked" || String(r.state).startsWith("skipped") ? "bad" : "");
  }

  let hostId = null, hostOrigin = null;
  async function loadHost(id) {
    hostId = id;
    const d = await api("/api/hosts/" + encodeURIComponent(id));
    const h = d.host;
    hostOrigin = h.origin;
    $("host-title").textContent = h.origin;
    $("host-cards").replaceChildren(
      card("state", h.state, "host-state"),
      card("queued", fmt.num(h.queued)),
      card("fetched", fmt.num(h.fetched)),
      card("errors", fmt.num(h.errors)),
      card("delay", h.delay_secs === undefined ? "–" : fmt.secs(h.delay_secs) + " (" + h.delay_why + ")", "host-delay"),
      card("robots.txt", h.robots + (h.robots_status ? " (" + h.robots_status + ")" : "")),
      card("cooperation", h.coop + (h.trust !== null && h.trust !== undefined ? ", trust " + h.trust.toFixed(2) : "")),
      card("requests saved", fmt.num(h.saved)),
    );
    table($("visits-table"), [
      { key: "url", label: "URL", wrap: true },
      { key: "status", label: "status", num: true, fmt: (v, r) => v ?? (r.error || "–") },
      { key: "size", label: "size", num: true, fmt: fmt.bytes },
      { key: "fetched_at", label: "time", fmt: fmt.time },
      { key: "visits", label: "visits", num: true },
      { key: "changes", label: "changes", num: true },
    ], d.visits, visitState, (r) => (r.status >= 400 || r.error) ? "bad" : "");
    if (d.schedule) {
      table($("schedule-table"), [
        { key: "url", label: "URL", wrap: true },
        { key: "due", label: "due", fmt: fmt.time },
        { key: "last", label: "last visit", fmt: fmt.time },
        { key: "rate_per_day", label: "changes/day", num: true },
        { key: "covered", label: "left to the site", fmt: (v) => v ? "yes" : "no" },
      ], d.schedule, dueState);
    } else {
      $("schedule-table").replaceChildren(el("p", { class: "muted" }, live ? "no refresh schedule (run with --keep-fresh)" : "the crawl is not running"));
    }
    const stats = d.coop_stats || {};
    table($("host-coop"), [{ key: "k", label: "figure" }, { key: "v", label: "value", num: true }],
      Object.entries(stats).map(([k, v]) => ({ k, v })), { sort: "k", asc: true });
  }

  async function loadFreshness() {
    const d = await api("/api/freshness");
    fresh = d.samples || [];
    $("fresh-note").textContent = d.keep_fresh ? "" : "No refresh policy runs: start the crawl with --keep-fresh.";
    drawFreshness();
  }

  function drawFreshness() {
    const last = fresh.length ? fresh[fresh.length - 1] : {};
    const perVisit = last.visits ? last.changes / last.visits : null;
    $("fresh-cards").replaceChildren(
      card("estimated freshness", fmt.pct(last.estimate), "fresh-estimate"),
      card("pages polled", fmt.num(last.polled)),
      card("due now", fmt.num(last.due), "fresh-due"),
      card("left to sites", fmt.num(last.covered)),
      card("changes per visit", perVisit === null ? "–" : perVisit.toFixed(2)),
      card("announcements", fmt.num(last.announced)),
      card("pushes", fmt.num(last.pushes), "fresh-pushes"),
    );
    chart($("chart-fresh"), [{ name: "freshness", points: fresh.filter((s) => s.estimate !== null).map((s) => [s.t, s.estimate]) }], { format: fmt.pct, min: 1 });
    chart($("chart-due"), [{ name: "due", points: fresh.map((s) => [s.t, s.due]) }]);
    chart($("chart-changes"), [
      { name: "changes found", points: fresh.map((s) => [s.t, s.changes]) },
      { name: "announced", points: fresh.map((s) => [s.t, s.announced]) },
      { name: "pushes", points: fresh.map((s) => [s.t, s.pushes]) },
    ]);
  }

  async function loadActions() {
    const d = await api("/api/actions");
    const rows = d.actions.map((a) => ({ at: a.at, from: a.from, action: a.action, what: JSON.stringify(Object.fromEntries(Object.entries(a).filter(([k]) => !["at", "from", "action"].includes(k)))) }));
    table($("actions-table"), [
      { key: "at", label: "time", fmt: fmt.time },
      { key: "from", label: "from" },
      { key: "action", label: "action" },
      { key: "what", label: "details", wrap: true },
    ], rows, actState);
  }

  async function act(body, msgBox) {
    try {
      const r = await api("/api/actions", body);
      say(msgBox, body.action.replace("_", " ") + ": done (" + r.applies + ")");
      await loadOverview();
      return true;
    } catch (e) {
      say(msgBox, e.message, true);
      return false;
    }
  }

  $("pause").addEventListener("click", () => act({ action: "pause" }, $("msg")));
  $("resume").addEventListener("click", () => act({ action: "resume" }, $("msg")));
  $("add-seed").addEventListener("click", async () => {
    const url = $("seed-url").value.trim();
    if (url && await act({ action: "add_seeds", urls: [url] }, $("msg"))) $("seed-url").value = "";
  });
  $("host-filter").addEventListener("input", (e) => { hostState.filter = e.target.value; hostState.offset = 0; loadHosts(); });
  $("block").addEventListener("click", () => act({ action: "block", host: hostOrigin }, $("host-msg")).then(() => loadHost(hostId)));
  $("unblock").addEventListener("click", () => act({ action: "unblock", host: hostOrigin }, $("host-msg")).then(() => loadHost(hostId)));
  $("set-delay").addEventListener("click", () => {
    const v = $("delay-input").value.trim();
    const seconds = v === "" ? null : Number(v);
    act({ action: "set_delay", host: hostOrigin, seconds }, $("host-msg")).then(() => loadHost(hostId));
  });

  function show() {
    const [tab, arg] = route();
    const load = { overview: loadOverview, hosts: loadHosts, host: () => loadHost(arg), freshness: loadFreshness, actions: loadActions }[tab];
    if (load) load().catch((e) => say($("msg"), e.message, true));
  }
  window.addEventListener("hashchange", show);
  show();
  loadOverview().catch((e) => say($("msg"), e.message, true));

  let lastTableLoad = 0;
  stream("/api/events", (d) => {
    if (d.offline) return;
    overview = d.overview;
    if (d.sample) { samples.push(d.sample); if (samples.length > 3600) samples.shift(); }
    if (d.fresh) { fresh.push(d.fresh); if (fresh.length > 3600) fresh.shift(); }
    const [tab, arg] = route();
    if (tab === "overview") drawOverview();
    else {
      const st = $("state");
      st.textContent = overview.state; st.className = "state " + overview.state;
    }
    if (tab === "freshness") drawFreshness();
    // Tables are read from the database: at most every two seconds.
    const now = Date.now();
    if (now - lastTableLoad > 2000) {
      lastTableLoad = now;
      if (tab === "hosts") loadHosts().catch(() => {});
      if (tab === "host") loadHost(arg).catch(() => {});
    }
  }, $("state"));
})();
