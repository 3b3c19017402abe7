// Keyboard navigation of lists (issue 33 item 4), one hook for every list
// of the console: `j`/`k` move the current row down/up, `Enter` opens it
// (presses the row's first link or button: the instance's id opens its
// drawer, a job's id its detail), and the current row has focus, so it is
// outlined (see theme/focus.css) and read by a screen reader. A list is
// any Ant Design table or list (their rows: `tr.ant-table-row`,
// `.ant-list-item`); the rows moved through are those of the top layer (the
// open dialog, else the open drawer, else the page) in the list that holds
// the focus, else the layer's main list (a table marked
// data-list="main"), else its first list with rows. Mounted once by the
// layout; keys typed into a field or pressed with Ctrl/Alt/Meta are left alone.
import { useEffect } from "react";

const LIST = ".ant-table-wrapper, .ant-list";
const ROW = "tr.ant-table-row, .ant-list-item";
const OPENER = 'a[href], button:not([disabled]):not([role="switch"])';

export function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLInputElement) return !["checkbox", "radio", "button", "submit"].includes(target.type);
  return ["TEXTAREA", "SELECT"].includes(target.tagName);
}

function visible(el: Element): boolean {
  return el instanceof HTMLElement && el.offsetParent !== null;
}

/** The top layer: an open dialog, else an open drawer, else the page. */
export function topLayer(): HTMLElement {
  const open = (selector: string) => [...document.querySelectorAll<HTMLElement>(selector)].filter(visible);
  const dialogs = open(".ant-modal-wrap .ant-modal");
  if (dialogs.length) return dialogs[dialogs.length - 1];
  const drawers = open(".ant-drawer-open .ant-drawer-content");
  if (drawers.length) return drawers[drawers.length - 1];
  return document.querySelector<HTMLElement>("main") ?? document.body;
}

function rowsOf(list: Element): HTMLElement[] {
  // a list's own rows, not those of a list nested in it
  return [...list.querySelectorAll<HTMLElement>(ROW)].filter((r) => r.closest(LIST) === list && visible(r));
}

function currentList(layer: HTMLElement): Element | null {
  const lists = [...layer.querySelectorAll(LIST)].filter((l) => rowsOf(l).length > 0);
  const focused = document.activeElement?.closest(LIST);
  if (focused && lists.includes(focused)) return focused;
  return lists.find((l) => l.matches('[data-list="main"]') || l.querySelector('[data-list="main"]')?.closest(LIST) === l) ?? lists[0] ?? null;
}

// the row last opened with Enter: the focus returns to it when what it
// opened closes, and `j`/`k` go on from it
let lastOpened: HTMLElement | null = null;

function focusRow(row: HTMLElement): void {
  if (!row.hasAttribute("tabindex")) row.setAttribute("tabindex", "-1");
  row.focus();
  row.scrollIntoView({ block: "nearest" });
}

/** Moves the current row by `step` (1 = `j`, -1 = `k`); false without a list. */
export function moveInList(step: 1 | -1): boolean {
  const list = currentList(topLayer());
  if (!list) return false;
  const rows = rowsOf(list);
  let at = rows.findIndex((r) => r.contains(document.activeElement));
  if (at < 0 && lastOpened && document.activeElement === document.body) at = rows.indexOf(lastOpened);
  const next = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
  focusRow(rows[next]);
  return true;
}

/** Opens the focused row (when the focus is on the row itself). */
export function openRow(): boolean {
  const row = document.activeElement;
  if (!(row instanceof HTMLElement) || !row.matches(ROW)) return false;
  const opener = [...row.querySelectorAll<HTMLElement>(OPENER)].find((el) => !el.closest(".ant-table-selection-column"));
  if (!opener) return false;
  lastOpened = row;
  opener.click();
  return true;
}

/** After a drawer or dialog opened from a row closes: the focus goes back
 * to that row (when it is still shown and nothing else took the focus). */
export function restoreListFocus(): void {
  requestAnimationFrame(() => {
    const row = lastOpened;
    if (!row || !row.isConnected || !visible(row)) return;
    const active = document.activeElement;
    if (active && active !== document.body && active.isConnected && visible(active)) return;
    row.focus({ preventScroll: true });
  });
}

export function useListNavigation(): void {
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.defaultPrevented || event.ctrlKey || event.altKey || event.metaKey || typing(event.target)) return;
      if ((event.key === "j" || event.key === "k") && moveInList(event.key === "j" ? 1 : -1)) event.preventDefault();
      else if (event.key === "Enter" && openRow()) event.preventDefault();
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}
