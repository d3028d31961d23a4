/**
 * What other domains may use of the nodes domain besides its module: the status checks' building
 * blocks (the services manager builds its rows from them) and the container inspection deep health
 * reads a start time from.
 */
export {
  httpHealth,
  inspectContainer,
  nodeNameOf,
  nodeUnreachable,
  notConfiguredStatus,
  serviceLabel,
  unreachableLabel,
  type ContainerInfo,
  type DeepHealthSource,
  type HttpHealth,
  type StatusService,
} from './status'
