// Global keyboard shortcuts, mounted once by the layout (issue 13, issue 33
// item 4): `/` focuses the page's search input (the element marked
// data-shortcut="search"), `r` refreshes (every active query is invalidated
// and refetched), `g` then a letter goes to a page, `Esc` closes the open
// drawer (when the focus is not in it: there Ant Design's drawer closes
// itself) or leaves a field of the page, `?` lists every shortcut in a
// dialog — with `j`/`k`/`Enter` of the lists (listNavigation.ts). Other keys
// typed into an input, a text area, a select or an editable element, or
// pressed with Ctrl/Alt/Meta, are left alone.
import { createElement, useEffect, useRef, useState, type ReactNode } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "react-router-dom";
import { PAGES } from "../pages/registry";
import { restoreListFocus, typing, useListNavigation } from "./listNavigation";
import { GO_TO } from "./shortcutKeys";
import { ShortcutsHelp } from "./ShortcutsHelp";

// how long `g` waits for its letter
const PREFIX_MS = 1500;

function closeTopDrawer(): boolean {
  if ([...document.querySelectorAll<HTMLElement>(".ant-modal-wrap")].some((m) => m.offsetParent !== null || m.style.display !== "none")) return false;
  const drawers = [...document.querySelectorAll<HTMLElement>(".ant-drawer-open .ant-drawer-content")];
  const top = drawers[drawers.length - 1];
  if (!top || top.contains(document.activeElement)) return false;
  const close = top.querySelector<HTMLElement>(".ant-drawer-close");
  if (!close) return false;
  close.click();
  restoreListFocus();
  return true;
}

/** `Esc` in a field of the page (not of a dialog or a drawer, not a select,
 * whose `Esc` closes its dropdown) leaves it, so `j`/`k` work again. */
function leaveField(target: EventTarget | null): boolean {
  if (!typing(target) || !(target instanceof HTMLElement)) return false;
  if (target.closest(".ant-modal, .ant-drawer, .ant-select") || target.getAttribute("role") === "combobox") return false;
  target.blur();
  return true;
}

/** Installs the shortcuts; returns the `?` dialog for the layout to render. */
export function useShortcuts(): ReactNode {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [helpOpen, setHelpOpen] = useState(false);
  const open = useRef(false);
  open.current = helpOpen;
  useListNavigation();

  useEffect(() => {
    let prefix = 0;
    function onKey(event: KeyboardEvent) {
      if (event.key === "Escape" && leaveField(event.target)) return;
      if (event.ctrlKey || event.altKey || event.metaKey || typing(event.target)) return;
      if (prefix && Date.now() - prefix < PREFIX_MS && event.key.length === 1) {
        prefix = 0;
        const page = PAGES.find((p) => p.key === GO_TO[event.key.toLowerCase()]);
        if (page) {
          event.preventDefault();
          event.stopImmediatePropagation();
          navigate(page.path);
        }
        return;
      }
      prefix = 0;
      if (event.key === "Escape") {
        if (closeTopDrawer()) event.preventDefault();
        return;
      }
      if (open.current) return;
      if (event.key === "g") {
        event.preventDefault();
        prefix = Date.now();
      } else if (event.key === "/") {
        const search = document.querySelector<HTMLElement>('[data-shortcut="search"]');
        if (!search) return;
        event.preventDefault();
        search.focus();
      } else if (event.key === "r") {
        event.preventDefault();
        void queryClient.invalidateQueries({ refetchType: "active" });
      } else if (event.key === "?") {
        event.preventDefault();
        setHelpOpen(true);
      }
    }
    // capture: `g j` must not also move the list (listNavigation listens on bubble)
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [queryClient, navigate]);

  return helpOpen ? createElement(ShortcutsHelp, { onClose: () => setHelpOpen(false) }) : null;
}
