export * from './gen/iop/v1/tunnel_pb.js';
export * from './grpc-message.js';
export * from './frame-codec.js';
export * from './assignment-codec.js';
