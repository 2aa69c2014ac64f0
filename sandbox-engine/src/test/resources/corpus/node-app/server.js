const express = require('express');

const app = express();
app.get('/health', (req, res) => res.json({ ok: true, express: require('express/package.json').version }));

module.exports = app;
if (require.main === module) {
  app.listen(Number(process.env.PORT || 3000), 'localhost', () => console.log('listening'));
}
