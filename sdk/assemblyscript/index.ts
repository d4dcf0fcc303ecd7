// The package's entry for asc, which resolves "@govgate/sdk" to
// node_modules/@govgate/sdk/index.ts: the library is in assembly/.
export * from "./assembly/index";
