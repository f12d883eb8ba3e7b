FROM --platform=linux/x86_64 exec.env.x86_64.6e8066bddfc7f266ee63ba:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
