// The agent console: what is published, what changed, what is kept out, the hub, IndexNow.
"use strict";

(() => {
  const { el, api, stream, fmt, chart, rate, table, route, say, card } = wc;
  const $ = (id) => document.getElementById(id);
  const states = { pub: { sort: "at" }, changes: { sort: "seq" }, reasons: { sort: "n" }, excl: { sort: "path", asc: true }, subs: { sort: "lag" }, pings: { sort: "at" }, crawlers: { sort: "requests" }, refusedSigs: { sort: "at" } };
  let deliveries = [];

  async function loadOverview() {
    const d = await api("/api/overview");
    $("site").textContent = d.base_url;
    const st = $("state");
    st.textContent = "watching";
    st.className = "state running";
    const last = d.publications[0];
    const j = d.judge || {};
    const banner = $("judge-banner");
    if (j.unreachable) {
      banner.hidden = false;
      banner.textContent = "The web server cannot be asked since " + fmt.time(j.unreachable[0]) + ": " +
        j.unreachable[1] + ". Nothing new is published until it answers; " + fmt.num(j.waiting) + " files wait.";
    } else if (j.config_unread) {
      banner.hidden = false;
      banner.textContent = j.config_unread;
    } else {
      banner.hidden = true;
    }
    $("cards").replaceChildren(
      card("public files", fmt.num(d.files), "card-files"),
      card("newest change", "#" + fmt.num(d.head), "card-head"),
      card("changes kept from", d.oldest === null ? "–" : "#" + fmt.num(d.oldest)),
      card("excluded", fmt.num(d.excluded), "card-excluded"),
      card("judged by", (j.server || "–") + (j.unreachable ? " (not answering)" : ""), "card-judge"),
      card("last publication", last ? fmt.time(last.at) : "–"),
      card("took", last ? fmt.secs(last.ms / 1000) : "–"),
      card("robots.rdf", last && last.listing_bytes ? fmt.bytes(last.listing_bytes) : "–"),
      card("kept versions", fmt.bytes(d.versions_bytes)),
      card("service", d.service || "not served (no --listen)"),
    );
    table($("publications-table"), [
      { key: "at", label: "time", fmt: fmt.time },
      { key: "what", label: "what" },
      { key: "ms", label: "duration", num: true, fmt: (v) => fmt.secs(v / 1000) },
      { key: "head", label: "up to #", num: true },
      { key: "listing_bytes", label: "robots.rdf", num: true, fmt: fmt.bytes },
      { key: "error", label: "error", wrap: true },
    ], d.publications, states.pub, (r) => r.error ? "bad" : "");
  }

  async function loadChanges() {
    const d = await api("/api/changes?limit=500");
    table($("changes-table"), [
      { key: "seq", label: "#", num: true },
      { key: "kind", label: "change" },
      { key: "path", label: "path", wrap: true },
      { key: "time", label: "time", fmt: fmt.time },
      { key: "size", label: "size", num: true, fmt: fmt.bytes },
      { key: "changed", label: "text changed", num: true, fmt: (v) => v === null || v === undefined ? "–" : fmt.pct(v) },
    ], d.changes, states.changes);
  }

  async function loadExcluded() {
    const d = await api("/api/excluded");
    table($("reasons-table"), [{ key: "why", label: "reason" }, { key: "n", label: "paths", num: true }],
      Object.entries(d.by_reason).map(([why, n]) => ({ why, n })), states.reasons);
    table($("excluded-table"), [{ key: "path", label: "path", wrap: true }, { key: "why", label: "reason" }], d.paths, states.excl);
  }

  async function loadHub() {
    const d = await api("/api/hub");
    deliveries = d.deliveries;
    $("hub-note").textContent = d.serving ? "" : "The hub runs with the service: start the agent with --listen.";
    drawHub(d);
  }

  function drawHub(d) {
    const last = deliveries.length ? deliveries[deliveries.length - 1] : {};
    if (d) {
      table($("subscribers-table"), [
        { key: "host", label: "callback host" },
        { key: "callback", label: "callback", wrap: true },
        { key: "lease_left_secs", label: "lease left", num: true, fmt: fmt.secs },
        { key: "cursor", label: "cursor", num: true },
        { key: "lag", label: "lag", num: true },
        { key: "failing_secs", label: "failing for", num: true, fmt: (v) => v === null ? "–" : fmt.secs(v) },
        { key: "coding", label: "coding" },
      ], d.subscribers, states.subs, (r) => r.failing_secs !== null ? "bad" : "");
      $("hub-cards").replaceChildren(
        card("subscribers", fmt.num(d.subscribers.length), "card-subscribers"),
        card("delivered", fmt.num(last.ok), "card-delivered"),
        card("failed", fmt.num(last.failed)),
        card("retries", fmt.num(last.retries)),
      );
    }
    const perMinute = (key) => rate(deliveries, key).map(([t, v]) => [t, v * 60]);
    chart($("chart-deliveries"), [
      { name: "delivered/min", points: perMinute("ok") },
      { name: "failed/min", points: perMinute("failed") },
    ]);
  }

  async function loadIndexNow() {
    const d = await api("/api/indexnow");
    $("indexnow-note").textContent = d.configured ? "Endpoint: " + d.configured : "IndexNow is not configured (--indexnow-endpoint and --indexnow-key).";
    table($("pings-table"), [
      { key: "at", label: "time", fmt: fmt.time },
      { key: "urls", label: "URLs", num: true },
      { key: "status", label: "status", num: true },
      { key: "outcome", label: "answer", wrap: true },
    ], d.pings, states.pings, (r) => r.outcome !== "accepted" ? "bad" : "");
  }

  async function loadCrawlers() {
    const d = await api("/api/identities");
    $("crawlers-note").textContent = "Policy: hub subscriptions from " + d.subscribers + (d.signers.length ? " (" + d.signers.join(", ") + ")" : "") +
      "; rate per verified crawler " + (d.rate_verified ? d.rate_verified + "/min" : "unlimited") + ", per other address " + (d.rate_unverified ? d.rate_unverified + "/min" : "unlimited") + ".";
    table($("crawlers-table"), [
      { key: "directory", label: "key directory", wrap: true },
      { key: "keyid", label: "key" },
      { key: "requests", label: "requests", num: true },
      { key: "last_seen", label: "last seen", fmt: fmt.time },
    ], d.verified, states.crawlers);
    table($("refused-table"), [
      { key: "at", label: "time", fmt: fmt.time },
      { key: "why", label: "why", wrap: true },
    ], d.refused, states.refusedSigs, () => "bad");
  }

  $("change-filter").addEventListener("input", (e) => { states.changes.filter = e.target.value; loadChanges(); });
  $("excluded-filter").addEventListener("input", (e) => { states.excl.filter = e.target.value; loadExcluded(); });

  const loaders = { overview: loadOverview, changes: loadChanges, excluded: loadExcluded, hub: loadHub, indexnow: loadIndexNow, crawlers: loadCrawlers };
  function show() {
    const [tab] = route();
    const load = loaders[tab];
    if (load) load().catch((e) => say($("msg"), e.message, true));
  }
  window.addEventListener("hashchange", show);
  show();

  let lastHead = null, lastPubs = null, lastLoad = 0;
  stream("/api/events", (d) => {
    const st = $("state");
    st.textContent = "watching"; st.className = "state running";
    if (d.deliveries) { deliveries.push(d.deliveries); if (deliveries.length > 3600) deliveries.shift(); }
    const [tab] = route();
    const moved = d.head !== lastHead || d.publications !== lastPubs;
    lastHead = d.head; lastPubs = d.publications;
    const now = Date.now();
    if (tab === "hub") {
      if (now - lastLoad > 2000) { lastLoad = now; loadHub().catch(() => {}); } else drawHub(null);
    } else if (moved || now - lastLoad > 5000) {
      lastLoad = now;
      show();
    }
  }, $("state"));
})();
