// A page's URL parameter that is no list's state (a tab): set it (a value,
// several values, or none to remove it) and keep the others, as
// useListState writes a list's parameters.
import { useSearchParams } from "react-router-dom";
import { withParams, type ParamValue } from "./useListState";

export function useSetParam() {
  const [params, setParams] = useSearchParams();
  return (name: string, value: ParamValue) => setParams(withParams(params, { [name]: value }));
}
