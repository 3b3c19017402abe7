// The state of a list (issue 29 item 6), owned in one place for every list
// of the console: its filters and its keyset page live in the URL, so a
// reload, a shared link and Back show the same rows.
//
// A page declares its filter parameters (`{ status: "many", keyword: "one" }`)
// and gets their values, `set` (one or several parameters; every other one —
// the open drawer `?instance=`, a saved `view` — is kept), `setFilters` (all
// the filters at once) and the pager for PagedList. The pager's cursors are
// the URL parameter `cursor`, one value per page turned (`?cursor=A&cursor=B`
// is page 3, and Previous drops the last); any filter change drops them, so
// it always returns to page 1 — no page builds a reset key.
//
// A list inside a drawer that is not itself in the URL (a subscription's
// hits) keeps the same state in memory (`{ memory: true }`); a page with
// several lists (tabs) names each one's cursor parameter
// (`{ cursor: "eventsCursor" }`).
import { useMemo, useState } from "react";
import { useSearchParams } from "react-router-dom";

/** A parameter's new value: one, several (repeated), or none (removed). */
export type ParamValue = string | number | boolean | readonly string[] | null | undefined;
export type ParamChanges = Readonly<Record<string, ParamValue>>;
export type FilterSpec = Readonly<Record<string, "one" | "many">>;
export type FilterValues<S extends FilterSpec> = { [K in keyof S]: S[K] extends "many" ? string[] : string | undefined };

/** What PagedList (and any other pager) shows and calls. */
export interface ListPager {
  cursor: string | null;
  page: number;
  hasPrevious: boolean;
  next: (cursor: string | null | undefined) => void;
  previous: () => void;
}

/** `params` with each of `changes` set (or removed), the rest kept; an
 * empty string, null or undefined is no value. */
export function withParams(params: URLSearchParams, changes: ParamChanges): URLSearchParams {
  const next = new URLSearchParams(params);
  for (const [name, value] of Object.entries(changes)) {
    next.delete(name);
    const values: readonly string[] = Array.isArray(value) ? value : value === null || value === undefined ? [] : [String(value)];
    for (const v of values) if (v !== "") next.append(name, v);
  }
  return next;
}

/** The filter values of `params` (also for a boot-time prefetch). */
export function readFilters<S extends FilterSpec>(filters: S, params: URLSearchParams): FilterValues<S> {
  const out: Record<string, string[] | string | undefined> = {};
  for (const [name, kind] of Object.entries(filters)) out[name] = kind === "many" ? params.getAll(name) : (params.get(name) ?? undefined);
  return out as FilterValues<S>;
}

/** The cursor of the page the URL shows (null: the first). */
export function pageCursor(params: URLSearchParams, name = "cursor"): string | null {
  return params.getAll(name).at(-1) ?? null;
}

const NO_FILTERS: FilterSpec = {};

/** `filters`: a constant (module level); a list without filters passes none. */
export function useListState<S extends FilterSpec>(filters: S = NO_FILTERS as S, options: { cursor?: string; memory?: boolean } = {}) {
  const cursorParam = options.cursor ?? "cursor";
  const [url, setUrl] = useSearchParams();
  const [memory, setMemory] = useState(() => new URLSearchParams());
  const params = options.memory ? memory : url;
  const write = (next: URLSearchParams, replace = false) => (options.memory ? setMemory(next) : setUrl(next, { replace }));
  const isFilter = (name: string) => Object.hasOwn(filters, name);

  const values = useMemo(() => readFilters(filters, params), [params, filters]);
  const trail = params.getAll(cursorParam);
  const turn = (cursors: string[]) => write(withParams(params, { [cursorParam]: cursors }));

  const pager: ListPager = {
    cursor: trail.at(-1) ?? null,
    page: trail.length + 1,
    hasPrevious: trail.length > 0,
    next: (cursor) => {
      if (cursor) turn([...trail, cursor]);
    },
    previous: () => turn(trail.slice(0, -1)),
  };

  return {
    /** Every parameter of the list's state (for a page's own typed reader). */
    params,
    values,
    /** Changes exactly when a filter value does (e.g. a filter form's key). */
    key: JSON.stringify(values),
    pager,
    /** Set one or several parameters, keep the others; a filter among them returns to page 1. */
    set: (changes: ParamChanges) => {
      const next = withParams(params, changes);
      if (Object.keys(changes).some(isFilter)) next.delete(cursorParam);
      write(next);
    },
    /** Replace every filter by `values` (one left out is cleared), apply
     * `others` to the non-filter parameters, keep the rest; page 1. */
    setFilters: (values: ParamChanges, others: ParamChanges = {}, how: { replace?: boolean } = {}) => {
      const next = withParams(new URLSearchParams(), values);
      params.forEach((value, name) => {
        if (!isFilter(name) && !Object.hasOwn(values, name) && name !== cursorParam) next.append(name, value);
      });
      write(withParams(next, others), how.replace);
    },
  };
}

