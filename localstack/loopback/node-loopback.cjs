// Preloaded (NODE_OPTIONS=--require) into the Node programs LocalStack
// starts: kinesis-mock (npm kinesis-local), behind DynamoDB Streams, has no
// option for the address it listens on and listens on every interface. A
// listen on the wildcard address, or on none, listens on 127.0.0.1 instead;
// one on a named address, or on a socket path, is left as it is.
'use strict';

const net = require('net');

const HOST = '127.0.0.1';
const wildcard = (host) => host === undefined || host === null || host === '' || host === '0.0.0.0' || host === '::' || host === '::0';
const isPort = (v) => typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first] = args;
  if (args.length === 0 || typeof first === 'function') {
    args.unshift(0, HOST); // listen([callback]): any port, every interface
  } else if (isPort(first)) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] !== 'string') {
      args.splice(1, 0, HOST);
    } else if (wildcard(args[1])) {
      args[1] = HOST;
    }
  } else if (first !== null && typeof first === 'object' && first.path === undefined &&
             first.fd === undefined && first.handle === undefined && first._handle === undefined &&
             wildcard(first.host)) {
    args[0] = { ...first, host: HOST }; // listen({port, host})
  }
  return listen.apply(this, args);
};
