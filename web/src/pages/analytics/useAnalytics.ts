// One query per analytics panel (the data layer's panelQuery, keyed by the
// panel and the definition filter), so changing the filter refetches every
// panel and a panel's error stays in its own card.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { panelQuery, type Panel } from "../../api/queries/analytics";

export { BROWSER_TIME_ZONE, type Panel, type PanelData } from "../../api/queries/analytics";

export function usePanel<P extends Panel>(panel: P, definitionKey: string | undefined) {
  return useQuery({ ...panelQuery(panel, definitionKey), placeholderData: keepPreviousData });
}
