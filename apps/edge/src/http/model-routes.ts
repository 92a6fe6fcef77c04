/**
 * A dialect's `model-list` and `model-get` endpoints (OpenAI and Anthropic `GET /v1/models`, Gemini
 * `GET /v1beta/models` and `GET /v1beta/models/{model}`): the models a client may send now
 * (pool/model-list.ts), in the dialect's shape (`Dialect.modelList`, `Dialect.modelInfo`). An
 * unknown model is 404 `model_not_found` in the dialect's envelope.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, type Dialect } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { listModels } from '../pool/model-list.js';
import { locals } from './request-context.js';

export function modelListHandler(edge: EdgeContext, dialect: Dialect) {
  return function modelList(_req: Request, res: Response, next: NextFunction): void {
    try {
      if (dialect.modelList === undefined)
        throw new IopError('internal', `${dialect.name} declares a model-list endpoint without modelList`);
      res.json(dialect.modelList(listModels(edge.pool.catalog), locals(res).target?.query ?? new URLSearchParams()));
    } catch (error) {
      next(error);
    }
  };
}

export function modelGetHandler(edge: EdgeContext, dialect: Dialect) {
  return function modelGet(_req: Request, res: Response, next: NextFunction): void {
    try {
      const id = locals(res).target?.params.model ?? '';
      if (dialect.modelInfo === undefined)
        throw new IopError('internal', `${dialect.name} declares a model-get endpoint without modelInfo`);
      const info = dialect.modelInfo(listModels(edge.pool.catalog), id);
      if (info === undefined)
        throw new IopError('model_not_found', `model ${JSON.stringify(id)} is not served here`, { param: 'model' });
      res.json(info);
    } catch (error) {
      next(error);
    }
  };
}
