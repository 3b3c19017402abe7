// The list shell of the console's keyset-paged lists: the query's error, the
// table (the keyboard's main list when `main`), row selection with labelled
// checkboxes, an optional batch bar over the table, and the pager of the
// list's state (useListState: filters and page in the URL). The page keeps
// its columns; the rows come from a data layer query (api/queries) whose
// page is `{ items, next }`. A list drawn otherwise than as one table (the
// health problems grouped by rule) passes `body` and keeps the rest.
import type { ReactNode } from "react";
import { Table, Typography, type TableColumnsType, type TableProps } from "antd";
import type { UseQueryResult } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { ErrorAlert } from "./errors";
import { Pager } from "./Pager";
import type { ListPager } from "./useListState";

interface Page<T> {
  items: T[];
  next?: string | null;
}

export interface Selection<T = unknown> {
  selected: number[];
  onChange: (ids: number[]) => void;
  /** The row's checkbox label, naming what the row is (default "Select #id"). */
  label?: (row: T) => string;
}

export function PagedList<T extends object>(props: {
  testId?: string;
  query: UseQueryResult<Page<T>>;
  pager: ListPager;
  columns?: TableColumnsType<T>;
  /** The keyboard's list of the page (data-list="main", components/listNavigation). */
  main?: boolean;
  emptyText?: string;
  /** Rows shown instead of the query's (e.g. none while a default view loads). */
  rows?: T[];
  loading?: boolean;
  selection?: Selection<T>;
  /** Over the table: the actions on the selected rows. */
  batchBar?: ReactNode;
  table?: Omit<TableProps<T>, "columns" | "dataSource" | "rowSelection">;
  /** Drawn instead of the table (`columns`, `main`, `selection` and `table` then unused). */
  body?: (rows: T[]) => ReactNode;
}) {
  const { t } = useTranslation();
  const { query, pager, selection } = props;
  const rows = props.rows ?? query.data?.items ?? [];
  return (
    <>
      {query.error ? <ErrorAlert error={query.error} /> : null}
      {props.batchBar}
      {props.body ? props.body(rows) : <Table<T>
        data-testid={props.testId}
        {...(props.main ? { "data-list": "main" } : {})}
        size="small"
        rowKey="id"
        pagination={false}
        loading={props.loading ?? query.isLoading}
        dataSource={rows}
        {...(props.emptyText === undefined
          ? {}
          : { locale: { emptyText: <Typography.Text type="secondary">{props.emptyText}</Typography.Text> } })}
        {...(selection
          ? {
              rowSelection: {
                selectedRowKeys: selection.selected,
                onChange: (keys) => selection.onChange(keys as number[]),
                getCheckboxProps: (row: T) =>
                  ({
                    "aria-label": selection.label ? selection.label(row) : t("common:selectRow", { id: (row as { id?: number }).id }),
                  }) as object,
              },
            }
          : {})}
        {...props.table}
        columns={props.columns}
      />}
      <Pager page={pager.page} hasPrevious={pager.hasPrevious} nextCursor={query.data?.next} onPrevious={pager.previous} onNext={() => pager.next(query.data?.next)} />
    </>
  );
}
