import js from "@eslint/js";
import globals from "globals";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

// The console's data layer (issue 29 item 6): query keys and query options
// are defined once per resource in src/api/queries/<resource>.ts. Anywhere
// else a query key is a key factory's (`jobKeys.detail(id)`), a query's
// function comes from a `…Query(…)` builder, and no code reads a cached
// query's key: a new inline key or a string-list invalidation fails the lint.
const DATA_LAYER = "src/api/queries/**";
const dataLayerRules = [
  {
    selector: "Property[key.name='queryKey']:not([value.callee.object.name=/Keys$/]):not([value.callee.name=/Keys$/])",
    message: "Query keys come from a key factory in src/api/queries (e.g. jobKeys.detail(id)), never an inline array.",
  },
  {
    selector: "Property[key.name='queryFn']",
    message: "Query functions live in a queryOptions builder in src/api/queries/<resource>.ts; spread it: useQuery({ ...jobQuery(id), enabled }).",
  },
  {
    selector: "MemberExpression[property.name='queryKey']",
    message: "Match cached queries through src/api/queries (isUnder, invalidate, a key factory), not by reading query.queryKey.",
  },
];

export default tseslint.config(
  { ignores: ["dist", "src/api/schema.d.ts"] },
  {
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    files: ["**/*.{ts,tsx}"],
    languageOptions: { ecmaVersion: 2022, globals: globals.browser },
    plugins: { "react-hooks": reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
  {
    files: ["src/**/*.{ts,tsx}"],
    ignores: [DATA_LAYER],
    rules: { "no-restricted-syntax": ["error", ...dataLayerRules] },
  },
);
