// minitf.Explorer's view: draws the `view` the kernel computes (minitf/explorer.py, build_view)
// and explains each number on hover or click. Plain ES module, no imports: works offline.
// DOM hooks for browser checks are listed in minitf/explorer.py's docstring.

const DEBOUNCE_MS = 400;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(key, value) {
  if (value === null) return "−∞";
  if (key.startsWith("ids.")) return String(value);
  const s = value.toFixed(2);
  return s === "-0.00" ? "0.00" : s.replace("-", "−");
}

// Diverging colours centred at 0 (ColorBrewer RdBu ends: colour-blind safe): blue < 0 < red.
function colour(value, scale) {
  if (value === null || !scale) return null;
  const x = Math.max(-1, Math.min(1, value / scale));
  const [r, g, b] = x >= 0 ? [178, 24, 43] : [33, 102, 172];
  const a = Math.abs(x);
  const mix = (c) => Math.round(255 + (c - 255) * a);
  return { bg: `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`, dark: a > 0.6 };
}

function isSum(key) {
  return key.includes(".rowsum.");
}

function maxAbs(values) {
  let m = 0;
  for (const v of values) if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  return m;
}

function drawCard(card) {
  const box = el("div", "mtf-card");
  // colour scale: the largest |value| of the card (or of each column, for mixed columns); ids and
  // row sums are not coloured
  const plain = [];
  card.keys.forEach((row, i) =>
    row.forEach((k, j) => {
      if (!isSum(k) && !k.startsWith("ids.")) plain.push([card.values[i][j], j]);
    })
  );
  const n = Math.max(...card.keys.map((r) => r.length));
  const scales = [...Array(n).keys()].map((j) =>
    maxAbs(plain.filter((c) => !card.colscale || c[1] === j).map((c) => c[0]))
  );
  const title = el("div", "mtf-card-title", card.title);
  if (!card.colscale && plain.length) {
    title.appendChild(el("span", "mtf-scale", ` ±${scales[0].toFixed(2)}`));
  }
  box.appendChild(title);
  const table = el("table", "mtf-table");
  if (card.cols) {
    const head = el("tr");
    head.appendChild(el("th", "mtf-corner"));
    for (const c of card.cols) head.appendChild(el("th", "mtf-col", c));
    table.appendChild(head);
  }
  card.keys.forEach((row, i) => {
    const tr = el("tr");
    if (card.highlight === i) tr.classList.add("mtf-followed");
    tr.appendChild(el("th", "mtf-row", card.rows[i]));
    row.forEach((key, j) => {
      const value = card.values[i][j];
      const td = el("td", "mtf-cell", fmt(key, value));
      td.dataset.key = key;
      td.dataset.value = value === null ? "-Infinity" : String(value);
      if (isSum(key)) {
        td.classList.add("mtf-sum");
      } else if (card.masked && card.masked[i] && card.masked[i][j]) {
        td.classList.add("mtf-masked");
      } else if (!key.startsWith("ids.")) {
        const c = colour(value, scales[j]);
        if (c) {
          td.style.background = c.bg;
          if (c.dark) td.classList.add("mtf-dark");
        }
      }
      tr.appendChild(td);
    });
    table.appendChild(tr);
  });
  const scroll = el("div", "mtf-table-wrap");
  scroll.appendChild(table);
  box.appendChild(scroll);
  if (card.note) box.appendChild(el("div", "mtf-card-note", card.note));
  return box;
}

function drawCards(cards, cls = "mtf-cards") {
  const row = el("div", cls);
  for (const card of cards) row.appendChild(drawCard(card));
  return row;
}

function render({ model, el: root }) {
  root.classList.add("mtf-explorer");
  const controls = el("div", "mtf-controls");
  const label = el("label", "mtf-label", "input ");
  const input = el("input", "mtf-text");
  input.type = "text";
  input.spellcheck = false;
  input.value = model.get("text");
  label.appendChild(input);
  const step = el("button", "mtf-step", "generate next byte ▸");
  step.title = "append the most likely next byte (greedy) and follow it";
  controls.append(label, step, el("span", "mtf-hint", "\\t = TAB, \\n = end of output, \\xNN = any byte"));
  const summary = el("div", "mtf-summary");
  const bytes = el("div", "mtf-bytes");
  const prediction = el("div", "mtf-prediction");
  const key = el("div", "mtf-key");
  key.innerHTML =
    '<span class="mtf-key-bar"></span><span>−max … 0 … +max: blue below 0, red above; each box ' +
    "has its own scale (±max in its title)</span>" +
    '<span class="mtf-key-swatch mtf-masked"></span><span>masked (the future)</span>' +
    '<span class="mtf-key-swatch mtf-sum"></span><span>row sum</span>' +
    "<span>· hover or click a number to see how it was computed</span>";
  const body = el("div", "mtf-body");
  const tooltip = el("div", "mtf-tooltip");
  tooltip.hidden = true;
  const tipKey = el("div", "mtf-tooltip-key");
  const tipText = el("div", "mtf-tooltip-text");
  tooltip.append(tipKey, tipText);
  root.append(controls, summary, bytes, prediction, key, body, tooltip);

  let pinned = null;
  const closed = new Set(); // titles of sections the learner folded
  let timer = null;

  function send() {
    clearTimeout(timer);
    timer = null;
    if (input.value !== model.get("text")) {
      model.set("text", input.value);
      model.save_changes();
    }
  }
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(send, DEBOUNCE_MS);
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") send();
  });
  step.addEventListener("click", () => {
    send();
    model.send({ type: "step" });
  });

  function show(cell) {
    const prov = (model.get("view").prov || {})[cell.dataset.key];
    tipKey.textContent = cell.dataset.key;
    tipText.textContent = prov || `${cell.dataset.key} = ${cell.dataset.value}`;
    tooltip.hidden = false;
    const r = cell.getBoundingClientRect();
    const base = root.getBoundingClientRect();
    const left = Math.max(0, Math.min(r.left - base.left, base.width - 460));
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${r.bottom - base.top + 4}px`;
    root.querySelectorAll(".mtf-hover").forEach((c) => c.classList.remove("mtf-hover"));
    cell.classList.add("mtf-hover");
  }
  function hide() {
    tooltip.hidden = true;
    root.querySelectorAll(".mtf-hover").forEach((c) => c.classList.remove("mtf-hover"));
  }
  root.addEventListener("mouseover", (e) => {
    const cell = e.target.closest(".mtf-cell");
    if (cell && !pinned) show(cell);
  });
  root.addEventListener("mouseout", (e) => {
    const cell = e.target.closest(".mtf-cell");
    if (cell && !pinned && !cell.contains(e.relatedTarget)) hide();
  });
  root.addEventListener("click", (e) => {
    const chip = e.target.closest(".mtf-pos");
    if (chip) {
      model.set("position", Number(chip.dataset.position));
      model.save_changes();
      return;
    }
    const cell = e.target.closest(".mtf-cell");
    if (cell && pinned !== cell) {
      pinned = cell;
      show(cell);
    } else {
      pinned = null;
      hide();
    }
  });

  function section(s) {
    const box = el("details", "mtf-section");
    box.open = !closed.has(s.title);
    box.addEventListener("toggle", () => (box.open ? closed.delete(s.title) : closed.add(s.title)));
    const head = el("summary", "mtf-section-title", s.title);
    if (s.note) head.appendChild(el("span", "mtf-section-note", s.note));
    box.appendChild(head);
    if (s.cards.length) box.appendChild(drawCards(s.cards));
    if (s.heads.length) {
      const heads = el("div", s.heads.length > 2 ? "mtf-heads mtf-scroll" : "mtf-heads");
      for (const h of s.heads) {
        const hb = el("div", "mtf-head");
        hb.appendChild(el("div", "mtf-head-title", h.title));
        hb.appendChild(drawCards(h.cards, "mtf-head-cards"));
        heads.appendChild(hb);
      }
      box.appendChild(heads);
    }
    if (s.after && s.after.length) box.appendChild(drawCards(s.after));
    return box;
  }

  function draw() {
    const view = model.get("view") || {};
    pinned = null;
    hide();
    body.replaceChildren();
    bytes.replaceChildren();
    if (input.value !== model.get("text") && timer === null) input.value = model.get("text");
    if (view.error || !view.meta) {
      prediction.replaceChildren();
      body.appendChild(el("div", "mtf-error", view.error || "nothing to show yet"));
      step.disabled = true;
      return;
    }
    const m = view.meta;
    summary.textContent = m.summary;
    bytes.appendChild(el("span", "mtf-bytes-label", "follow position:"));
    m.labels.forEach((lab, t) => {
      const chip = el("button", "mtf-pos");
      chip.dataset.position = t;
      chip.title = `position ${t}: byte ${m.ids[t]}`;
      if (t === m.position) chip.classList.add("mtf-selected");
      chip.append(el("span", "mtf-pos-char", lab === " " ? "␣" : lab), el("span", "mtf-pos-id", `${t}`));
      bytes.appendChild(chip);
    });
    const p = m.prediction;
    prediction.replaceChildren();
    prediction.dataset.byte = p.byte;
    prediction.append(
      "greedy next byte after position " + m.position + ": ",
      el("b", "mtf-pred-byte", `'${p.label}' (${p.byte}${p.name ? ", " + p.name : ""})`),
      ` with p = ${p.p.toFixed(3)}`
    );
    // a pair's output ends at EOS: generation stops there, as minitf.generate does
    step.disabled = m.T >= m.max_bytes || m.ended;
    step.title = m.ended ? "the output has ended (⏎, EOS): edit the text to go on"
                         : "append the most likely next byte (greedy) and follow it";
    for (const s of view.sections) body.appendChild(section(s));
  }

  model.on("change:view", draw);
  draw();
  return () => {
    clearTimeout(timer);
    model.off("change:view", draw);
  };
}

export default { render };
