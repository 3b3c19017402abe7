// The alerting page's lists (rules, events, silences): the console's list
// shell (components/PagedList) with an empty text and a horizontal scroll.
import type { TableColumnsType } from "antd";
import type { UseQueryResult } from "@tanstack/react-query";
import { PagedList } from "../../components/PagedList";
import type { ListPager } from "../../components/useListState";

export function PagedTable<T extends { id: number }>(props: {
  testId: string;
  query: UseQueryResult<{ items: T[]; next?: string | null }>;
  pager: ListPager;
  columns: TableColumnsType<T>;
  emptyText: string;
}) {
  return <PagedList<T> {...props} table={{ scroll: { x: "max-content" } }} />;
}
