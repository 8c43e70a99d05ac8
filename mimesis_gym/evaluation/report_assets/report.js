// The episode browser of report.html (mimesis_gym/evaluation/html_report.py writes the page).
// Every string from a record reaches the page through text nodes (el() below), never as markup.
"use strict";
(function () {
  const ROW_HEIGHT = 30;
  const OVERSCAN = 8;
  const COLUMNS = [
    ["#", null, "n"], ["Env", "env"], ["Task", "task_id"], ["Agent", "agent"], ["User", "user"],
    ["Tr.", "trial", "n"], ["Beh.", "user_behavior"], ["Status", "status"], ["Score", "episode_score", "n"],
    ["Turns", "n_turns", "n"],
    ["Secs", "duration_s", "n"], ["Fail.", "n_user_failures", "n"],
  ];

  const index = JSON.parse(document.getElementById("episode-index").textContent);
  const F = {};
  index.fields.forEach(function (name, i) { F[name] = i; });
  const rows = index.rows;
  let details = null;
  let matches = [];
  let sortField = null;
  let sortDirection = 1;
  let current = null;

  const viewport = document.getElementById("episode-viewport");
  const spacer = document.getElementById("episode-spacer");
  const body = document.getElementById("episode-rows");
  const head = document.getElementById("episode-head");
  const count = document.getElementById("match-count");
  const detailPanel = document.getElementById("episode-detail");
  const privilegedToggle = document.getElementById("show-privileged");
  const selects = Array.prototype.slice.call(document.querySelectorAll("#filters select[data-field]"));
  const scoreMin = document.getElementById("filter-score-min");
  const scoreMax = document.getElementById("filter-score-max");
  const taskText = document.getElementById("filter-task");

  function el(tag, props) {
    const node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (key) {
        const value = props[key];
        if (value === undefined || value === null) return;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = String(value);
        else if (key.indexOf("data-") === 0 || key === "role" || key === "title" || key === "tabindex") {
          node.setAttribute(key, String(value));
        } else node[key] = value;
      });
    }
    for (let i = 2; i < arguments.length; i++) {
      const child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function text(value) {
    if (value === null || value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function number(value, digits) {
    return typeof value === "number" ? value.toFixed(digits) : "—";
  }

  function cellText(row, column) {
    const field = column[1];
    if (field === "episode_score") return number(row[F.episode_score], 3);
    if (field === "duration_s") return number(row[F.duration_s], 1);
    return text(row[F[field]]);
  }

  // ---- filters and sorting -------------------------------------------------------------------
  selects.forEach(function (select) {
    const field = select.getAttribute("data-field");
    const seen = {};
    rows.forEach(function (row) { seen[row[F[field]]] = true; });
    Object.keys(seen).sort().forEach(function (value) {
      select.append(el("option", { value: value, text: value }));
    });
  });

  function bound(input) {
    return input.value === "" || isNaN(Number(input.value)) ? null : Number(input.value);
  }

  function applyFilters() {
    const wanted = selects.map(function (select) { return [F[select.getAttribute("data-field")], select.value]; });
    const low = bound(scoreMin);
    const high = bound(scoreMax);
    const needle = taskText.value.trim().toLowerCase();
    matches = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      let keep = true;
      for (let j = 0; j < wanted.length && keep; j++) {
        if (wanted[j][1] !== "" && String(row[wanted[j][0]]) !== wanted[j][1]) keep = false;
      }
      const score = row[F.episode_score];
      if (keep && low !== null && !(typeof score === "number" && score >= low)) keep = false;
      if (keep && high !== null && !(typeof score === "number" && score <= high)) keep = false;
      if (keep && needle && String(row[F.task_id]).toLowerCase().indexOf(needle) < 0) keep = false;
      if (keep) matches.push(i);
    }
    if (sortField !== null) {
      const at = F[sortField];
      matches.sort(function (a, b) {
        const x = rows[a][at];
        const y = rows[b][at];
        if (x === y) return a - b;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * sortDirection;
      });
    }
    count.textContent = matches.length + " of " + rows.length + " episodes";
    viewport.setAttribute("data-matches", String(matches.length));
    spacer.style.height = matches.length * ROW_HEIGHT + "px";
    viewport.scrollTop = 0;
    renderRows();
  }

  function renderRows() {
    const top = viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(matches.length, Math.ceil((top + viewport.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    const nodes = [];
    for (let position = first; position < last; position++) nodes.push(rowNode(matches[position], position));
    body.replaceChildren.apply(body, nodes);
  }

  function rowNode(i, position) {
    const row = rows[i];
    const node = el("div", {
      class: "row" + (i === current ? " selected" : ""), role: "row", tabindex: 0, "data-index": i,
      title: row[F.error] ? row[F.error] : undefined,
    });
    node.style.top = position * ROW_HEIGHT + "px";
    COLUMNS.forEach(function (column) {
      const value = column[1] === null ? String(i + 1) : cellText(row, column);
      const classes = (column[2] || "") + (column[1] === "status" ? " status-" + row[F.status] : "");
      node.append(el("span", { class: classes, role: "gridcell", text: value, title: value }));
    });
    return node;
  }

  COLUMNS.forEach(function (column) {
    if (column[1] === null) {
      head.append(el("span", { class: "n", role: "columnheader", text: column[0] }));
      return;
    }
    const button = el("button", { type: "button", text: column[0], title: "sort by " + column[0] });
    button.addEventListener("click", function () {
      sortDirection = sortField === column[1] ? -sortDirection : 1;
      sortField = column[1];
      applyFilters();
    });
    head.append(el("span", { class: column[2] || "", role: "columnheader" }, button));
  });

  // ---- the episode view -----------------------------------------------------------------------
  function record(i) {
    if (details === null) details = JSON.parse(document.getElementById("episode-details").textContent);
    return details[i];
  }

  function table(headers, bodyRows) {
    const thead = el("thead", null, el("tr", null, ...headers.map(function (h) { return el("th", { text: h }); })));
    const tbody = el("tbody", null, ...bodyRows.map(function (cells) {
      return el("tr", null, ...cells.map(function (cell) {
        return cell instanceof Node ? el("td", null, cell) : el("td", { text: text(cell) });
      }));
    }));
    return el("div", { class: "table-wrap" }, el("table", null, thead, tbody));
  }

  function parts(object) {
    const keys = Object.keys(object || {});
    if (!keys.length) return el("div", { class: "parts", text: "no reward parts" });
    return el("div", { class: "parts" }, ...keys.map(function (key) {
      const value = object[key];
      return el("span", { text: key + "=" + (typeof value === "number" ? String(Math.round(value * 1e4) / 1e4) : text(value)) });
    }));
  }

  function flags(step) {
    const box = el("span");
    if (!step.valid_action) box.append(el("span", { class: "flag bad", text: "invalid action" }));
    if (step.terminated) box.append(el("span", { class: "flag", text: "terminated" }));
    if (step.truncated) box.append(el("span", { class: "flag", text: "truncated" }));
    if (step.user_failure) box.append(el("span", { class: "flag bad", text: "user failure: " + step.user_failure }));
    return box;
  }

  function turn(s) {
    return el("div", { class: "turn" },
      el("div", { class: "turn-head" },
        el("strong", { text: "Turn " + s.turn }), " · " + (s.action_kind || "no kind") + " · reward ",
        el("strong", { class: "reward", text: number(s.reward, 4) }),
        " · agent " + number(s.agent_latency_s, 2) + " s · step " + number(s.step_latency_s, 2) + " s ", flags(s)),
      parts(s.reward_parts),
      el("div", { class: "who", text: "agent's action" }), el("pre", { text: text(s.content) }),
      el("div", { class: "who", text: "observation (the user's or env's reply)" }), el("pre", { text: text(s.observation) }));
  }

  function message(entry) {
    const role = text(entry.role) || "message";
    const box = el("div", { class: "msg role-" + role.replace(/[^a-z_]/gi, "") },
      el("div", { class: "who", text: role + (entry.tool_call_id ? " · " + entry.tool_call_id : "") }),
      el("pre", { text: text(entry.content) }));
    (Array.isArray(entry.tool_calls) ? entry.tool_calls : []).forEach(function (call) {
      const fn = (call && call.function) || {};
      box.append(el("div", { class: "tool-call" },
        el("div", { class: "who", text: "tool call" + (call && call.id ? " · " + call.id : "") }),
        el("pre", { text: text(fn.name) + "(" + text(fn.arguments) + ")" })));
    });
    return role === "system" ? el("details", null, el("summary", { text: "system prompt" }), box) : box;
  }

  function privilegedSection(r) {
    const data = r.privileged;
    const box = el("section", { class: "privileged" }, el("h4", { text: "Privileged: never shown to the agent" }));
    if (!data || !Object.keys(data).length) {
      box.append(el("p", { class: "note", text: "This run stored no privileged data (eval --privileged stores it)." }));
      return box;
    }
    if (data.hidden && Object.keys(data.hidden).length) {
      box.append(el("h4", { text: "Hidden task data (at the episode's end)" }), el("pre", { text: text(data.hidden) }));
    }
    if (Array.isArray(data.turns) && data.turns.length) {
      box.append(el("h4", { text: "Per turn" }), table(["Turn", "User thought", "User utterance", "Judgements", "Role thoughts"],
        data.turns.map(function (t) { return [t.turn, t.user_thought, t.user_utterance, t.judgements, t.thoughts]; })));
    }
    if (Array.isArray(data.thoughts) && data.thoughts.length) {
      box.append(el("h4", { text: "Role thoughts" }), table(["Turn", "Role", "Call", "Thought"],
        data.thoughts.map(function (t) { return [t.turn, t.role, t.call_index, t.thought]; })));
    }
    Object.keys(data).filter(function (key) { return ["hidden", "turns", "thoughts"].indexOf(key) < 0; })
      .forEach(function (key) { box.append(el("h4", { text: key }), el("pre", { text: text(data[key]) })); });
    return box;
  }

  function behaviorText(r) {
    const condition = r.user_behavior || "control";
    if (condition === "control") return condition;
    const turns = (r.behavior_turns || []).length ? " (turns " + r.behavior_turns.join(", ") + ")" : "";
    const enacted = r.behavior_enacted === true ? "enacted" : r.behavior_enacted === false ? "not enacted" : "not checked";
    return condition + ": " + enacted + turns;
  }

  function renderDetail() {
    if (current === null) return;
    const r = record(current);
    const nodes = [el("h3", { text: r.env + " · " + r.task_id + " · " + r.agent + " vs " + r.user })];
    const facts = [["status", r.status], ["episode score", number(r.episode_score, 4)], ["turns", r.n_turns],
      ["terminated / truncated", r.terminated + " / " + r.truncated], ["trial · seed", r.trial + " · " + r.seed],
      ["user behaviour", behaviorText(r)], ["judge", r.judge], ["env id", r.env_id], ["seconds", number(r.duration_s, 2)], ["key", r.key],
      ["run", r.run_id], ["worker", r.worker], ["started", r.started_at]];
    nodes.push(el("dl", { class: "facts" }, ...facts.reduce(function (all, fact) {
      return all.concat([el("dt", { text: fact[0] }), el("dd", { text: text(fact[1]) })]);
    }, [])));
    if (r.error) nodes.push(el("p", { class: "error" }, el("strong", { text: "error: " }), el("span", { text: r.error })));
    if (r.score_context && Object.keys(r.score_context).length) {
      nodes.push(el("details", null, el("summary", { text: "score context" }), el("pre", { text: text(r.score_context) })));
    }
    if ((r.user_failures || []).length) {
      nodes.push(el("h4", { text: "User failures" }), table(["Turn", "Role", "Kind", "Info kind", "Detail", "Attempts", "HTTP"],
        r.user_failures.map(function (f) { return [f.turn, f.role, f.kind, f.info_kind, f.detail, f.attempts, f.status]; })));
    }
    nodes.push(el("h4", { text: "Turns (" + (r.steps || []).length + "): rewards and their parts" }));
    (r.steps || []).forEach(function (s) { nodes.push(turn(s)); });
    nodes.push(el("h4", { text: "Transcript (what the agent saw and sent)" }));
    const transcript = el("div", { class: "transcript" });
    (r.transcript || []).forEach(function (entry) { transcript.append(message(entry)); });
    if (!(r.transcript || []).length) transcript.append(el("p", { class: "note", text: "No transcript recorded." }));
    nodes.push(transcript);
    if (r.usage && Object.keys(r.usage).length) {
      nodes.push(el("h4", { text: "Usage" }), table(["Role", "Calls", "Attempts", "Prompt tokens", "Completion tokens", "Seconds"],
        Object.keys(r.usage).map(function (role) {
          const u = r.usage[role] || {};
          return [role, u.calls, u.attempts, u.prompt_tokens, u.completion_tokens, number(u.seconds, 2)];
        })));
    }
    if (privilegedToggle.checked) nodes.push(privilegedSection(r));
    else nodes.push(el("p", { class: "note", text: "Privileged data (the user's private thoughts, the task's hidden data) is hidden: tick “show privileged” to see it." }));
    detailPanel.replaceChildren.apply(detailPanel, nodes);
    detailPanel.setAttribute("data-episode", String(current));
  }

  function open(i) {
    current = i;
    renderRows();
    renderDetail();
    if (location.hash !== "#episode-" + (i + 1)) history.replaceState(null, "", "#episode-" + (i + 1));
  }

  // ---- wiring ---------------------------------------------------------------------------------
  document.getElementById("filters").addEventListener("submit", function (event) { event.preventDefault(); });
  selects.concat([scoreMin, scoreMax, taskText]).forEach(function (input) {
    input.addEventListener("input", applyFilters);
    input.addEventListener("change", applyFilters);
  });
  document.getElementById("filter-reset").addEventListener("click", function () {
    selects.forEach(function (select) { select.value = ""; });
    scoreMin.value = scoreMax.value = taskText.value = "";
    applyFilters();
  });
  privilegedToggle.addEventListener("change", renderDetail);
  let pending = false;
  viewport.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; renderRows(); });
  });
  body.addEventListener("click", function (event) {
    const row = event.target.closest(".row");
    if (row) open(Number(row.getAttribute("data-index")));
  });
  body.addEventListener("keydown", function (event) {
    const row = event.target.closest(".row");
    if (row && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      open(Number(row.getAttribute("data-index")));
    }
  });
  window.addEventListener("resize", renderRows);

  applyFilters();
  const linked = /^#episode-(\d+)$/.exec(location.hash);
  if (linked && Number(linked[1]) >= 1 && Number(linked[1]) <= rows.length) open(Number(linked[1]) - 1);
})();
