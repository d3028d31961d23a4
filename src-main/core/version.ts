import pkg from '../../package.json'

/** Package version in the `<major>.<minor>.<patch>:<revision>` form the specs use. */
export const VERSION = `${pkg.version}:0`
