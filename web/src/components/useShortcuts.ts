// Global keyboard shortcuts, mounted once by the layout: `/` focuses the
// page's search input (the element marked data-shortcut="search"), `r`
// refreshes (every active query is invalidated and refetched), `?` lists
// the shortcuts in a modal. Keys typed into an input, a text area, a select
// or an editable element, or pressed with Ctrl/Alt/Meta, are left alone.
import { createElement, useEffect } from "react";
import { App } from "antd";
import { useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";

export const SHORTCUTS = ["/", "r", "?"] as const;
const HELP: Record<(typeof SHORTCUTS)[number], string> = { "/": "search", r: "refresh", "?": "help" };

function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  return ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

export function useShortcuts(): void {
  const queryClient = useQueryClient();
  const { modal } = App.useApp();
  const { t } = useTranslation("shortcuts");

  useEffect(() => {
    let open = false;
    function onKey(event: KeyboardEvent) {
      if (event.ctrlKey || event.altKey || event.metaKey || typing(event.target)) return;
      if (event.key === "/") {
        const search = document.querySelector<HTMLElement>('[data-shortcut="search"]');
        if (!search) return;
        event.preventDefault();
        search.focus();
      } else if (event.key === "r") {
        event.preventDefault();
        void queryClient.invalidateQueries({ refetchType: "active" });
      } else if (event.key === "?" && !open) {
        event.preventDefault();
        open = true;
        modal.info({
          title: t("title"),
          icon: null,
          maskClosable: true,
          okText: t("close"),
          afterClose: () => {
            open = false;
          },
          content: createElement(
            "table",
            { "data-testid": "shortcuts-help" },
            createElement(
              "tbody",
              null,
              SHORTCUTS.map((key) =>
                createElement(
                  "tr",
                  { key },
                  createElement("td", { style: { paddingRight: 16 } }, createElement("kbd", null, key)),
                  createElement("td", null, t(`key.${HELP[key]}`)),
                ),
              ),
            ),
          ),
        });
      }
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [queryClient, modal, t]);
}
