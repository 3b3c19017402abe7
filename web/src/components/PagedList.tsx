// The list shell of the console's keyset-paged lists: the query's error, the
// table (the keyboard's main list when `main`), row selection with labelled
// checkboxes, an optional batch bar over the table, and the pager. The page
// keeps its filters (in the URL) and its columns; the rows come from a data
// layer query (api/queries) whose page is `{ items, next }`.
import type { ReactNode } from "react";
import { Table, Typography, type TableColumnsType, type TableProps } from "antd";
import type { UseQueryResult } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { ErrorAlert } from "./errors";
import { Pager } from "./Pager";
import type { useCursor } from "./useCursor";

interface Page<T> {
  items: T[];
  next?: string | null;
}

export interface Selection {
  selected: number[];
  onChange: (ids: number[]) => void;
}

export function PagedList<T extends { id: number }>(props: {
  testId: string;
  query: UseQueryResult<Page<T>>;
  pager: ReturnType<typeof useCursor>;
  columns: TableColumnsType<T>;
  /** The keyboard's list of the page (data-list="main", components/listNavigation). */
  main?: boolean;
  emptyText?: string;
  /** Rows shown instead of the query's (e.g. none while a default view loads). */
  rows?: T[];
  loading?: boolean;
  selection?: Selection;
  /** Over the table: the actions on the selected rows. */
  batchBar?: ReactNode;
  table?: Omit<TableProps<T>, "columns" | "dataSource" | "rowSelection">;
}) {
  const { t } = useTranslation();
  const { query, pager, selection } = props;
  return (
    <>
      {query.error ? <ErrorAlert error={query.error} /> : null}
      {props.batchBar}
      <Table<T>
        data-testid={props.testId}
        {...(props.main ? { "data-list": "main" } : {})}
        size="small"
        rowKey="id"
        pagination={false}
        loading={props.loading ?? query.isLoading}
        dataSource={props.rows ?? query.data?.items ?? []}
        {...(props.emptyText === undefined
          ? {}
          : { locale: { emptyText: <Typography.Text type="secondary">{props.emptyText}</Typography.Text> } })}
        {...(selection
          ? {
              rowSelection: {
                selectedRowKeys: selection.selected,
                onChange: (keys) => selection.onChange(keys as number[]),
                getCheckboxProps: (row: T) => ({ "aria-label": t("common:selectRow", { id: row.id }) }) as object,
              },
            }
          : {})}
        {...props.table}
        columns={props.columns}
      />
      <Pager page={pager.page} hasPrevious={pager.hasPrevious} nextCursor={query.data?.next} onPrevious={pager.previous} onNext={() => pager.next(query.data?.next)} />
    </>
  );
}
