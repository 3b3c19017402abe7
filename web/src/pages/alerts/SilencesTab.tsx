// Silences (SPEC O-22): the list by state (active / pending / expired / all),
// create, and expire early (confirmed; the record stays).
import { App, Button, Popconfirm, Select, Space } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { useListState } from "../../components/useListState";
import { PagedTable } from "./PagedTable";
import { StateTag, useMetricLabel } from "./labels";
import { ActionLink } from "../../components/ActionLink";
import { alertKeys, silencesQuery } from "../../api/queries/alerts";

type Silence = Schemas["SilencePublic"];
type State = "all" | "active" | "pending" | "expired";
const STATES: State[] = ["all", "active", "pending", "expired"];
const SILENCE_FILTERS = { state: "one" } as const;

export function SilencesTab({ onCreate }: { onCreate: () => void }) {
  const { t } = useTranslation("alerts");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const metricLabel = useMetricLabel();
  const { values, pager, set } = useListState(SILENCE_FILTERS, { cursor: "silencesCursor" });
  const state = STATES.find((s) => s === values.state) ?? "all";
  const list = useQuery({
    ...silencesQuery(state, pager.cursor),
    placeholderData: keepPreviousData,
  });

  async function expire(s: Silence) {
    try {
      await unwrap(api.POST("/api/workflows/engine/alerts/silences/{silenceId}/expire", { params: { path: { silenceId: s.id } } }));
      message.success(t("silence.expired", { id: s.id }));
      await client.invalidateQueries({ queryKey: alertKeys.silences() });
    } catch (e) {
      showError(e);
    }
  }

  function matcher(s: Silence): string {
    const m = s.matcher;
    const parts = [
      m.ruleId != null ? t("silence.matchRule", { id: m.ruleId }) : null,
      m.metric ? metricLabel(m.metric) : null,
      m.tenant ? t("silence.matchTenant", { tenant: m.tenant }) : null,
    ].filter(Boolean);
    return parts.length ? parts.join(" · ") : t("silence.matchAll");
  }

  return (
    <div data-testid="alert-silences">
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={onCreate} data-testid="silence-create">
          {t("silence.create")}
        </Button>
        <Select<State>
          data-testid="silence-state-filter" aria-label={t("silence.allStates")}
          style={{ width: 160 }}
          value={state}
          onChange={(s) => set({ state: s === "all" ? null : s })}
          options={STATES.map((s) => ({ value: s, label: s === "all" ? t("silence.allStates") : t(`state.${s}`) }))}
        />
      </Space>
      <PagedTable<Silence>
        testId="silences-table"
        query={list}
        pager={pager}
        emptyText={t("silence.none")}
        columns={[
          { title: "#", dataIndex: "id", width: 60 },
          { title: t("silence.matcher"), key: "matcher", render: (_, s) => matcher(s) },
          { title: t("silence.startsAt"), dataIndex: "startsAt", render: formatTime },
          { title: t("silence.endsAt"), dataIndex: "endsAt", render: formatTime },
          { title: t("silence.state"), dataIndex: "state", render: (v: string, s) => <StateTag state={v} testId={`silence-state-${s.id}`} /> },
          { title: t("silence.comment"), dataIndex: "comment", ellipsis: true, width: 240 },
          { title: t("silence.createdBy"), dataIndex: "createdBy" },
          {
            title: "",
            key: "actions",
            render: (_, s) =>
              s.state === "expired" ? null : (
                <Popconfirm
                  title={t("silence.expireConfirm", { id: s.id })}
                  onConfirm={() => expire(s)}
                  okText={t("silence.expire")}
                  cancelText={t("common:cancel")}
                  okButtonProps={{ "data-testid": "confirm-ok" } as Record<string, string>}
                >
                  <ActionLink data-testid={`silence-expire-${s.id}`}>{t("silence.expire")}</ActionLink>
                </Popconfirm>
              ),
          },
        ]}
      />
    </div>
  );
}
