// express ships without types and @types/express is not a dependency: the discovery test fixture uses it untyped.
declare module 'express';
