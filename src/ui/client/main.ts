import { h, render } from 'preact';
import { App } from './app.ts';
import './styles.css';

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(h(App, null), root);
}
