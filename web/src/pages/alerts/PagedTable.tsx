// The alerting page's lists (rules, events, silences): one keyset-paged
// table with its error, loading state, empty text and pager.
import { Table, Typography, type TableColumnsType } from "antd";
import type { UseQueryResult } from "@tanstack/react-query";
import { ErrorAlert } from "../../components/errors";
import { Pager } from "../../components/Pager";
import type { useCursor } from "../../components/useCursor";

interface Page<T> {
  items: T[];
  next?: string | null;
}

export function PagedTable<T extends { id: number }>(props: {
  testId: string;
  query: UseQueryResult<Page<T>>;
  pager: ReturnType<typeof useCursor>;
  columns: TableColumnsType<T>;
  emptyText: string;
}) {
  const { query, pager } = props;
  return (
    <>
      {query.error ? <ErrorAlert error={query.error} /> : null}
      <Table<T>
        data-testid={props.testId}
        scroll={{ x: "max-content" }}
        size="small"
        rowKey="id"
        pagination={false}
        loading={query.isLoading}
        dataSource={query.data?.items ?? []}
        locale={{ emptyText: <Typography.Text type="secondary">{props.emptyText}</Typography.Text> }}
        columns={props.columns}
      />
      <Pager page={pager.page} hasPrevious={pager.hasPrevious} nextCursor={query.data?.next} onPrevious={pager.previous} onNext={() => pager.next(query.data?.next)} />
    </>
  );
}
