/** Small DOM builders the console's pages share. */

export const element = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

/** A result's `value_map` as the `dt`/`dd` pairs of a description list. */
export const valuePairs = (valueMap = {}) =>
  Object.entries(valueMap).flatMap(([field, value]) => [element('dt', '', field), element('dd', '', value)]);

/** A copy of a `<template>`'s first element. */
export const fromTemplate = (selector) => document.querySelector(selector).content.firstElementChild.cloneNode(true);
