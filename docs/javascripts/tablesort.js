/* Sortable tables for the butcherflow docs (bundled: the site loads nothing from other hosts).
 * Every table inside an element of class "sortable" sorts by a column when its heading is
 * clicked (again: the other way). Cells are compared as numbers when both parse as numbers
 * ("3,152,384", "4+", "∞"), otherwise as text; empty cells and "—" always sort last. */
(function () {
  "use strict";

  function value(cell) {
    var text = (cell.getAttribute("data-sort") || cell.textContent || "").trim();
    if (text === "" || text === "—" || text === "-") return null;
    if (text === "∞" || text === "inf") return Infinity;
    var number = parseFloat(text.replace(/,/g, "").replace(/^−/, "-"));
    return isNaN(number) ? text.toLowerCase() : number;
  }

  function compare(a, b) {
    if (a === null && b === null) return 0;
    if (a === null) return 1;
    if (b === null) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }

  function sortBy(table, column, heading) {
    var body = table.tBodies[0];
    if (!body) return;
    var ascending = heading.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, index) {
      return { row: row, key: value(row.cells[column] || row.cells[0]), index: index };
    });
    keyed.sort(function (x, y) {
      var order = compare(x.key, y.key);
      if (x.key !== null && y.key !== null && !ascending) order = -order;
      return order || x.index - y.index;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.removeAttribute("aria-sort");
    });
    heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function setUp() {
    document.querySelectorAll(".sortable table").forEach(function (table) {
      if (!table.tHead || table.getAttribute("data-sortable") === "ready") return;
      table.setAttribute("data-sortable", "ready");
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        th.setAttribute("role", "button");
        th.setAttribute("tabindex", "0");
        th.title = "sort by this column";
        th.addEventListener("click", function () { sortBy(table, column, th); });
        th.addEventListener("keydown", function (event) {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            sortBy(table, column, th);
          }
        });
      });
    });
  }

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(setUp); /* mkdocs-material: runs on every page */
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
